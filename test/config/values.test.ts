// What each kind of setting accepts beyond its range: whole numbers written plainly, URLs of the
// schemes named, keys and proxies as written, and a config file that holds only what the README says.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify from 'fastify';
import { ConfigError, DEFAULTS, loadConfig, redactConfig } from '../../src/config/config.ts';
import { formatVkey, SIG_TYPE_COSIGNATURE_V1 } from '../../src/domain/auditlog/note.ts';

const refused = (env: Record<string, string>, key: string, said?: RegExp) =>
  assert.throws(() => loadConfig(env), (e: unknown) => e instanceof ConfigError && e.key === key && (!said || said.test(e.message)), JSON.stringify(env));
const witnessKey = formatVkey('localhost/gavel-witness', SIG_TYPE_COSIGNATURE_V1, new Uint8Array(32).fill(7));

test('a whole number is digits alone: no sign, space, exponent, hex or trailing text', () => {
  for (const bad of ['80abc', '8O', ' 80', '80 ', '-1', '+80', '1e3', '0x50', '80.0', '٨٠']) refused({ GAVEL_PORT: bad }, 'GAVEL_PORT', /must be an integer between 0 and 65535/);
  assert.equal(loadConfig({ GAVEL_PORT: '080' }).port, 80);
});

test('a whole number out of range is quoted as written, past 2^53 too; one in the file that JSON cannot carry exactly is refused as that', () => {
  // Quoted as Number() read them: "got 9007199254740992", "got 1e+23".
  for (const big of ['9007199254740993', '99999999999999999999999', '000000070000']) {
    refused({ GAVEL_PORT: big }, 'GAVEL_PORT', new RegExp(`must be an integer between 0 and 65535, got ${big}$`));
  }
  const file = join(mkdtempSync(join(tmpdir(), 'gavel-cfg-')), 'gavel.json');
  for (const big of ['9007199254740993', '1e23']) {
    writeFileSync(file, `{"port":${big}}`);
    refused({ GAVEL_CONFIG: file }, `${file}: port`, /is a number JSON does not carry exactly \(integers are exact up to 2\^53 - 1 in magnitude\), far beyond what any setting accepts$/);
  }
});

test('URLs: the schemes each setting names, and no user name or password where the URL is printed and fetched', () => {
  assert.equal(loadConfig({ GAVEL_DATABASE_URL: 'postgresql://db/g' }).databaseUrl, 'postgresql://db/g');
  assert.equal(loadConfig({ GAVEL_WITNESS_URL: 'https://witness.example', GAVEL_WITNESS_VKEY: witnessKey }).witnessUrl, 'https://witness.example');
  assert.equal(loadConfig({ GAVEL_PUBLIC_URL: 'http://10.0.0.5:7400' }).publicUrl, 'http://10.0.0.5:7400');
  refused({ GAVEL_PUBLIC_URL: 'ftp://gavel.example' }, 'GAVEL_PUBLIC_URL', /must use http: or https:/);
  refused({ GAVEL_PUBLIC_URL: 'gavel.example' }, 'GAVEL_PUBLIC_URL', /must be a URL/);
  refused({ GAVEL_PUBLIC_URL: 'https://:pw@gavel.example' }, 'GAVEL_PUBLIC_URL', /user name or password/);
  refused({ GAVEL_WITNESS_URL: 'http://:pw@127.0.0.1:7402', GAVEL_WITNESS_VKEY: witnessKey }, 'GAVEL_WITNESS_URL', /user name or password/);
});

test('the witness key is taken as written, space around it aside; a key given by the caller needs no URL', () => {
  assert.equal(loadConfig({ GAVEL_WITNESS_URL: 'http://127.0.0.1:7402', GAVEL_WITNESS_VKEY: ` ${witnessKey}\n` }).witnessVkey, witnessKey);
  // `gavel up` and the tests hand over the key of a witness they start themselves.
  assert.equal(loadConfig({}, { witnessVkey: witnessKey }).witnessVkey, witnessKey);
});

test('proxies: a single address at full width is allowed; a padded width, or IPv4\'s /0 in upper-case IPv6 form, is not', () => {
  assert.deepEqual(loadConfig({ GAVEL_TRUST_PROXY: '10.0.0.5/32,::1/128' }).trustProxy, ['10.0.0.5/32', '::1/128']);
  refused({ GAVEL_TRUST_PROXY: '10.0.0.0/0008' }, 'GAVEL_TRUST_PROXY', /CIDR/);
  refused({ GAVEL_TRUST_PROXY: '10.0.0.5 10.0.0.6' }, 'GAVEL_TRUST_PROXY', /separated by commas/);
  refused({ GAVEL_TRUST_PROXY: '::FFFF:0:0/96' }, 'GAVEL_TRUST_PROXY', /too wide/);
});

test('IPv4\'s /0 spelt out in full IPv6 form is refused as too wide: the proxy check reads it as every IPv4 client', async () => {
  for (const all of ['0:0:0:0:0:ffff:0:0/96', '0::ffff:0:0/96', '0:0:0:0:0:FFFF:0.0.0.0/100', '::0:ffff:10.0.0.0/103']) {
    refused({ GAVEL_TRUST_PROXY: all }, 'GAVEL_TRUST_PROXY', /too wide/);
  }
  assert.deepEqual(loadConfig({ GAVEL_TRUST_PROXY: '0:0:0:0:0:ffff:10.0.0.0/104' }).trustProxy, ['0:0:0:0:0:ffff:10.0.0.0/104']);
  // What the refusal prevents: Fastify believes any IPv4 client's X-Forwarded-For under that range.
  const app = Fastify({ trustProxy: ['0:0:0:0:0:ffff:0:0/96'] });
  app.get('/', async (request) => request.ip);
  const res = await app.inject({ url: '/', remoteAddress: '203.0.113.9', headers: { 'x-forwarded-for': '198.51.100.1' } });
  assert.equal(res.body, '198.51.100.1');
});

test('the config file: an empty GAVEL_CONFIG is unset, the file holds an object of strings and numbers, and "" there is unset too', () => {
  assert.deepEqual(loadConfig({ GAVEL_CONFIG: '' }), loadConfig({}));
  const file = join(mkdtempSync(join(tmpdir(), 'gavel-cfg-')), 'gavel.json');
  for (const text of ['null', '7', '"host"', 'true']) {
    writeFileSync(file, text);
    refused({ GAVEL_CONFIG: file }, 'GAVEL_CONFIG', /must hold a JSON object/);
  }
  writeFileSync(file, '{"host":true}');
  refused({ GAVEL_CONFIG: file }, `${file}: host`, /must be a string or a number, not boolean/);
  writeFileSync(file, '{"host":"","port":"","witness_url":""}');
  const c = loadConfig({ GAVEL_CONFIG: file });
  assert.deepEqual([c.host, c.port, c.witnessUrl], [DEFAULTS.host, DEFAULTS.port, undefined]);
  refused({ GAVEL_CONFIG: join(file, '..', 'missing.json') }, 'GAVEL_CONFIG', /cannot read .*missing\.json/);
});

test('printing masks only credentials: a URL without any is printed as given, and keys and secrets in the query are masked', () => {
  const plain = redactConfig({ ...DEFAULTS, databaseUrl: 'postgres://db:5432/g' });
  assert.equal(plain.databaseUrl, 'postgres://db:5432/g');
  const masked = JSON.stringify(redactConfig({ ...DEFAULTS, databaseUrl: 'postgres://db/g?sslkey=K3y-file&client_secret=S3cret&sslmode=require' }));
  assert.ok(!/K3y|S3cret/.test(masked) && /sslmode=require/.test(masked), masked);
});
