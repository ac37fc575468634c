import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify from 'fastify';
import { ConfigError, DEFAULTS, isLoopbackHost, loadConfig, redactConfig } from '../../src/config/config.ts';
import { storeOptions } from '../../src/service.ts';

test('defaults bind to loopback with SQLite under ./data', () => {
  const c = loadConfig({});
  assert.equal(c.host, '127.0.0.1');
  assert.equal(c.port, DEFAULTS.port);
  assert.equal(c.databaseUrl, undefined);
  assert.ok(c.dataDir.endsWith('/data'));
});

test('environment overrides the file, and the file overrides defaults', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gavel-cfg-'));
  const file = join(dir, 'gavel.json');
  writeFileSync(file, JSON.stringify({ port: 9000, host: '0.0.0.0' }));
  const c = loadConfig({ GAVEL_CONFIG: file, GAVEL_PORT: '9100' });
  assert.equal(c.port, 9100);
  assert.equal(c.host, '0.0.0.0');
});

test('a bad value in the file is refused by its key even while a variable overrides it', () => {
  // Else the file would start cleanly until the variable is dropped (another service manager, a
  // shell without it), and only then stop the service over a value written long before.
  const dir = mkdtempSync(join(tmpdir(), 'gavel-cfg-'));
  const file = join(dir, 'gavel.json');
  writeFileSync(file, JSON.stringify({ port: 'eighty', log_level: 'info' }));
  assert.throws(() => loadConfig({ GAVEL_CONFIG: file, GAVEL_PORT: '9100' }),
    (e: unknown) => e instanceof ConfigError && e.key === `${file}: port` && /got "eighty"/.test(e.message));
});

test('a variable set to the empty string is unset: the file\'s value stands, else the default', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gavel-cfg-'));
  const file = join(dir, 'gavel.json');
  writeFileSync(file, JSON.stringify({ host: '127.0.0.2', port: 7644 }));
  const c = loadConfig({ GAVEL_CONFIG: file, GAVEL_HOST: '', GAVEL_PORT: '' });
  assert.equal(c.host, '127.0.0.2');
  assert.equal(c.port, 7644);
  assert.equal(loadConfig({ GAVEL_HOST: '' }).host, '127.0.0.1');
  assert.throws(() => loadConfig({ GAVEL_HOST: '   ' }), /GAVEL_HOST: must not be empty/);
});

test('a bad value names its key', () => {
  assert.throws(() => loadConfig({ GAVEL_PORT: 'eighty' }), (e: unknown) => e instanceof ConfigError && e.key === 'GAVEL_PORT');
  assert.throws(() => loadConfig({ GAVEL_PORT: '70000' }), /GAVEL_PORT/);
  assert.throws(() => loadConfig({ GAVEL_DATABASE_URL: 'mysql://x' }), /GAVEL_DATABASE_URL: must use postgres/);
  assert.throws(() => loadConfig({ GAVEL_LOG_LEVEL: 'loud' }), /GAVEL_LOG_LEVEL/);
});

test('an unknown key in the config file is refused by name', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gavel-cfg-'));
  const file = join(dir, 'gavel.json');
  writeFileSync(file, JSON.stringify({ prot: 1 }));
  assert.throws(() => loadConfig({ GAVEL_CONFIG: file }), /prot: unknown key/);
  writeFileSync(file, '[1,2]');
  assert.throws(() => loadConfig({ GAVEL_CONFIG: file }), /JSON object/);
  // Where the file breaks, never V8's excerpt of it, which would print a password written unquoted.
  writeFileSync(file, '{"port": 7400, "database_url": postgres-pw-in-clear}');
  assert.throws(() => loadConfig({ GAVEL_CONFIG: file }), (e: unknown) => e instanceof ConfigError && e.key === 'GAVEL_CONFIG'
    && /as JSON \(unexpected character "p"\)/.test(e.message) && !/pw-in/.test(e.message));
  // A byte order mark (a Windows editor's "UTF-8") is named, not shown as an invisible character.
  writeFileSync(file, '\ufeff{"port": 7400}');
  assert.throws(() => loadConfig({ GAVEL_CONFIG: file }), /as JSON \(it starts with a byte order mark \(U\+FEFF\); remove it\)$/);
  // Values are strings or numbers, each given once: nothing is made a string of, nothing is last-wins.
  for (const [text, said] of [['{"port":[18720]}', /port: must be a string or a number, not an array/], ['{"host":{"a":1}}', /host: must be a string or a number, not object/],
    ['{"port":7400,"port":7401}', /port: is given more than once/], ['{"log_level":null}', /log_level: must be a string or a number, not null/]] as const) {
    writeFileSync(file, text);
    assert.throws(() => loadConfig({ GAVEL_CONFIG: file }), said, text);
  }
  writeFileSync(file, '{"port":7411,"host":"127.0.0.1"}');
  assert.equal(loadConfig({ GAVEL_CONFIG: file }).port, 7411);
});

test('credentials in URLs are masked when printed', () => {
  const c = loadConfig({ GAVEL_DATABASE_URL: 'postgres://gavel:s3cret@db:5432/gavel' });
  assert.equal(c.databaseUrl, 'postgres://gavel:s3cret@db:5432/gavel');
  assert.ok(!JSON.stringify(redactConfig(c)).includes('s3cret'));
  // node-postgres takes a password from the query as well.
  const q = loadConfig({ GAVEL_DATABASE_URL: 'postgres://gavel@db:5432/gavel?password=Qu3ry&sslpassword=Tls&application_name=x' });
  const printed = JSON.stringify(redactConfig(q));
  assert.ok(!printed.includes('Qu3ry') && !printed.includes('Tls') && printed.includes('application_name=x'), printed);
  // The witness and public URLs are printed and fetched: credentials in them are refused by name.
  for (const [k, v] of [['GAVEL_WITNESS_URL', 'http://w:pw@127.0.0.1:7402'], ['GAVEL_PUBLIC_URL', 'https://u:pw@gavel.example']] as const) {
    assert.throws(() => loadConfig({ [k]: v }), (e: unknown) => e instanceof ConfigError && e.key === k && /user name or password/.test(e.message));
  }
});

test('a witness URL needs its pinned key, and the key must be a witness cosignature key', async () => {
  assert.throws(() => loadConfig({ GAVEL_WITNESS_URL: 'http://127.0.0.1:7402' }), (e: unknown) => e instanceof ConfigError && e.key === 'GAVEL_WITNESS_VKEY');
  const { formatVkey, SIG_TYPE_COSIGNATURE_V1, SIG_TYPE_ED25519 } = await import('../../src/domain/auditlog/note.ts');
  const witnessKey = formatVkey('localhost/gavel-witness', SIG_TYPE_COSIGNATURE_V1, new Uint8Array(32).fill(3));
  const logKey = formatVkey('localhost/gavel', SIG_TYPE_ED25519, new Uint8Array(32).fill(3));
  assert.equal(loadConfig({ GAVEL_WITNESS_URL: 'http://127.0.0.1:7402', GAVEL_WITNESS_VKEY: witnessKey }).witnessVkey, witnessKey);
  assert.throws(() => loadConfig({ GAVEL_WITNESS_URL: 'http://127.0.0.1:7402', GAVEL_WITNESS_VKEY: logKey }), (e: unknown) => e instanceof ConfigError && e.key === 'GAVEL_WITNESS_VKEY' && /cosignature/.test(e.message));
  assert.throws(() => loadConfig({ GAVEL_WITNESS_VKEY: 'not a key' }), (e: unknown) => e instanceof ConfigError && e.key === 'GAVEL_WITNESS_VKEY');
  // A key without its witness would be dropped without a word.
  assert.throws(() => loadConfig({ GAVEL_WITNESS_VKEY: witnessKey }), (e: unknown) => e instanceof ConfigError && e.key === 'GAVEL_WITNESS_VKEY' && /without GAVEL_WITNESS_URL/.test(e.message));
});

test('trusted proxies are listed by address or CIDR range; "true", hop counts and malformed ranges are refused', () => {
  assert.deepEqual(loadConfig({ GAVEL_TRUST_PROXY: '10.0.0.5, 10.1.0.0/16,::1,fd00::/8' }).trustProxy, ['10.0.0.5', '10.1.0.0/16', '::1', 'fd00::/8']);
  assert.equal(loadConfig({}).trustProxy, undefined);
  for (const bad of ['true', '1', '10.0.0.0/33', '10.0.0.1/8/2', 'proxy.example', '10.0.0.1,', '::1/129', 'fe80::1%eth0']) {
    assert.throws(() => loadConfig({ GAVEL_TRUST_PROXY: bad }), (e: unknown) => e instanceof ConfigError && e.key === 'GAVEL_TRUST_PROXY' && /CIDR/.test(e.message), bad);
  }
  // "Every address" in CIDR form is the same as trusting every client's header: refused by name, not by a crash at start.
  for (const all of ['0.0.0.0/0', '::/0', '10.0.0.5, ::/0', '::ffff:0:0/96', '::ffff:0.0.0.0/100', '0.0.0.0/1', '128.0.0.0/7', '::/6']) {
    assert.throws(() => loadConfig({ GAVEL_TRUST_PROXY: all }), (e: unknown) => e instanceof ConfigError && e.key === 'GAVEL_TRUST_PROXY' && /too wide/.test(e.message), all);
  }
  // What the parser accepts, the server accepts too.
  for (const ok of ['10.0.0.1/24', '10.0.0.0/8', '::ffff:10.0.0.1/120', '::ffff:10.0.0.0/104', 'fc00::/7', '0.0.0.0', '::']) {
    assert.doesNotThrow(() => Fastify({ trustProxy: loadConfig({ GAVEL_TRUST_PROXY: ok }).trustProxy! }), ok);
  }
});

test('loopback listen addresses are told from the rest (serve warns when it listens beyond loopback without TLS)', () => {
  for (const h of ['127.0.0.1', '127.1.2.3', '::1', '[::1]', 'localhost', 'LOCALHOST']) assert.equal(isLoopbackHost(h), true, h);
  for (const h of ['0.0.0.0', '::', '192.0.2.10', 'gavel.example', '128.0.0.1']) assert.equal(isLoopbackHost(h), false, h);
});

test('every bound is held at its edge, and a bad file value is named by the file and its key', () => {
  const refused = (env: Record<string, string>, key: string) =>
    assert.throws(() => loadConfig(env), (e: unknown) => e instanceof ConfigError && e.key === key, JSON.stringify(env));
  refused({ GAVEL_PORT: '65536' }, 'GAVEL_PORT');
  assert.equal(loadConfig({ GAVEL_PORT: '65535' }).port, 65535);
  refused({ GAVEL_BODY_LIMIT_BYTES: '1023' }, 'GAVEL_BODY_LIMIT_BYTES');
  refused({ GAVEL_BODY_LIMIT_BYTES: String(16 * 1024 * 1024 + 1) }, 'GAVEL_BODY_LIMIT_BYTES');
  assert.equal(loadConfig({ GAVEL_BODY_LIMIT_BYTES: '1024' }).bodyLimitBytes, 1024);
  // 0 would turn the request timeout off, and with it the bound on a stalled body.
  refused({ GAVEL_REQUEST_TIMEOUT_MS: '0' }, 'GAVEL_REQUEST_TIMEOUT_MS');
  refused({ GAVEL_REQUEST_TIMEOUT_MS: '99' }, 'GAVEL_REQUEST_TIMEOUT_MS');
  // Under a second, ordinary statements of a loaded database would be cut as dead.
  refused({ GAVEL_DATABASE_REPLY_TIMEOUT_MS: '999' }, 'GAVEL_DATABASE_REPLY_TIMEOUT_MS');
  assert.deepEqual(storeOptions(loadConfig({ GAVEL_DATABASE_URL: 'postgres://db/g', GAVEL_DATABASE_REPLY_TIMEOUT_MS: '1000' })),
    { kind: 'postgres', url: 'postgres://db/g', replyTimeoutMs: 1000 });
  // A user name alone is a credential too.
  refused({ GAVEL_WITNESS_URL: 'http://someone@127.0.0.1:7402' }, 'GAVEL_WITNESS_URL');
  // An IPv4 /7 spelt as an IPv6-mapped range: one bit wider than the narrowest IPv4 private range.
  refused({ GAVEL_TRUST_PROXY: '::ffff:0.0.0.0/103' }, 'GAVEL_TRUST_PROXY');
  const dir = mkdtempSync(join(tmpdir(), 'gavel-cfg-'));
  const file = join(dir, 'gavel.json');
  writeFileSync(file, JSON.stringify({ port: 'eighty' }));
  refused({ GAVEL_CONFIG: file }, `${file}: port`);
  assert.equal(loadConfig({ GAVEL_DATA_DIR: 'relative/data' }).dataDir, join(process.cwd(), 'relative/data'));
  for (const h of ['127.0.0.1.nip.io', '127.example']) assert.equal(isLoopbackHost(h), false, h);
});

test('a token in the witness URL\'s query is masked when printed, as the database URL\'s are', () => {
  const c = { ...DEFAULTS, witnessUrl: 'http://127.0.0.1:7402/?token=W1tness-T0ken', databaseUrl: 'postgres://db/g?sslpassword=x&auth_token=Db-T0ken' };
  const printed = JSON.stringify(redactConfig(c));
  assert.ok(!/T0ken/.test(printed), printed);
  assert.match(printed, /127\.0\.0\.1:7402/);
});

test('a path beginning with ~ is refused by its key: nothing expands it, so it would make a directory named ~', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gavel-cfg-'));
  const file = join(dir, 'gavel.json');
  writeFileSync(file, JSON.stringify({ data_dir: '~/gavel' }));
  assert.throws(() => loadConfig({ GAVEL_CONFIG: file }), (e: unknown) => e instanceof ConfigError && /: data_dir: ~ is not expanded here \(only a shell does\): give the full path$/.test(e.message));
  assert.throws(() => loadConfig({ GAVEL_MERCHANTS_FILE: '~/merchants.json' }), /GAVEL_MERCHANTS_FILE: ~ is not expanded here/);
  assert.throws(() => loadConfig({ GAVEL_DATA_DIR: '~' }), /GAVEL_DATA_DIR: ~ is not expanded here/);
  // Only a leading ~ means home: one inside a path is a name like any other.
  assert.ok(loadConfig({ GAVEL_DATA_DIR: './a~b' }).dataDir.endsWith('/a~b'));
});

test('GAVEL_HOST is an address or a host name: a URL, a port or brackets are refused by its key, before anything starts', () => {
  for (const host of ['127.0.0.1:8080', 'http://localhost', '[::1]', '999.1.1.1', 'my host', 'a..b']) {
    assert.throws(() => loadConfig({ GAVEL_HOST: host }), (e: unknown) => e instanceof ConfigError && e.key === 'GAVEL_HOST'
      && e.message === `configuration GAVEL_HOST: must be an IP address or a host name (no scheme, port or brackets), got "${host}"`, host);
  }
  for (const host of ['127.0.0.1', '0.0.0.0', '::', '::1', 'fe80::1%eth0', 'localhost', 'gavel-1.internal.example', 'db.example.', 'gavel_api']) assert.equal(loadConfig({ GAVEL_HOST: host }).host, host);
});
