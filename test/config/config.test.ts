import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify from 'fastify';
import { ConfigError, DEFAULTS, isLoopbackHost, loadConfig, redactConfig } from '../../src/config/config.ts';

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
