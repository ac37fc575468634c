// The merchants file is validated at start; every error names the bad key; the secret is never printed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { loadMerchants, parseMerchants } from '../../src/merchants/config.ts';
import { ConfigError } from '../../src/config/config.ts';
import { signatureHeader, verifySignature } from '../../src/merchants/signature.ts';

const good = { base_url: 'https://pay.example/api/', secret: 'a-secret-of-enough-length', timeout_ms: 2000, operations: { charge: { method: 'POST', path: '/charges' } } };

test('a valid file loads; operation URLs stay on the merchant origin; the secret never prints', () => {
  const reg = parseMerchants({ merchants: { acme: good } });
  const m = reg.get('acme')!;
  assert.equal(m.urlOf(m.operations.get('charge')!).toString(), 'https://pay.example/api/charges');
  assert.equal(reg.maxTimeoutMs, 2000);
  assert.ok(!JSON.stringify(m).includes(good.secret));
  assert.ok(!inspect(m, { depth: 5 }).includes(good.secret));
  assert.equal(loadMerchants(undefined).size, 0);
});

test('bounds: a secret of 16 to 1024 characters and a timeout of 1 to 120000 ms load, 10000 ms when none is given; recovery waits on the longest', () => {
  const edges = parseMerchants({ merchants: {
    low: { ...good, secret: 's'.repeat(16), timeout_ms: 1 },
    high: { ...good, secret: 's'.repeat(1024), timeout_ms: 120_000 },
    plain: { base_url: good.base_url, secret: good.secret, operations: good.operations },
  } });
  assert.deepEqual(['low', 'high', 'plain'].map((n) => edges.get(n)!.timeoutMs), [1, 120_000, 10_000]);
  assert.equal(edges.maxTimeoutMs, 120_000);
  assert.equal(parseMerchants({ merchants: { a: { ...good, timeout_ms: 300 }, b: { ...good, timeout_ms: 200 } } }).maxTimeoutMs, 300);
  assert.equal(parseMerchants({ merchants: {} }).maxTimeoutMs, 10_000, 'no merchant: the default bounds the age of a row in flight');
});

test('every bad key is named', () => {
  const cases: [unknown, RegExp][] = [
    [[], /\(root\)/],
    [{ merchants: {}, extra: 1 }, /extra: unknown key/],
    [{ merchants: { 'bad name!': good } }, /merchants\.bad name!/],
    [{ merchants: { acme: { ...good, base_url: 'ftp://x' } } }, /merchants\.acme\.base_url/],
    [{ merchants: { acme: { ...good, base_url: 'https://u:p@x' } } }, /merchants\.acme\.base_url/],
    [{ merchants: { acme: { ...good, secret: 'short' } } }, /merchants\.acme\.secret/],
    [{ merchants: { acme: { ...good, timeout_ms: 0 } } }, /merchants\.acme\.timeout_ms/],
    [{ merchants: { acme: { ...good, operations: {} } } }, /merchants\.acme\.operations/],
    [{ merchants: { acme: { ...good, operations: { charge: { method: 'GET', path: '/x' } } } } }, /operations\.charge\.method/],
    [{ merchants: { acme: { ...good, operations: { charge: { method: 'POST', path: '//evil.example/x' } } } } }, /operations\.charge\.path/],
    [{ merchants: { acme: { ...good, operations: { charge: { method: 'POST', path: 'http://evil/' } } } } }, /operations\.charge\.path/],
    [{ merchants: { acme: { ...good, url: 'x' } } }, /merchants\.acme\.url: unknown key/],
    // The documented bounds (docs/executions.md), each just past its edge.
    [{ merchants: { acme: { ...good, base_url: 'https://pay.example/api?v=1' } } }, /merchants\.acme\.base_url/],
    [{ merchants: { acme: { ...good, base_url: 'https://pay.example/api#top' } } }, /merchants\.acme\.base_url/],
    [{ merchants: { acme: { ...good, secret: 's'.repeat(15) } } }, /merchants\.acme\.secret/],
    [{ merchants: { acme: { ...good, secret: 's'.repeat(1025) } } }, /merchants\.acme\.secret/],
    [{ merchants: { acme: { ...good, timeout_ms: 120_001 } } }, /merchants\.acme\.timeout_ms/],
    [{ merchants: { acme: { ...good, timeout_ms: 1.5 } } }, /merchants\.acme\.timeout_ms/],
    [{ merchants: { acme: { ...good, operations: { charge: { method: 'POST', path: '/a/../admin' } } } } }, /operations\.charge\.path/],
    [{ merchants: { acme: { ...good, operations: { charge: { method: 'POST', path: '/charges?to=evil' } } } } }, /operations\.charge\.path/],
    [{ merchants: { acme: { ...good, operations: { charge: { method: 'POST', path: '/charges', url: 'http://evil/' } } } } }, /operations\.charge\.url: unknown key \(known: method, path, amount\)/],
    [{ merchants: { acme: { ...good, operations: { 'bad op!': { method: 'POST', path: '/charges' } } } } }, /operations\.bad op!/],
    [{ merchants: { acme: { ...good, base_url: 'https://:p@pay.example/api' } } }, /merchants\.acme\.base_url/],
    // Not objects where objects belong: refused by name, never a TypeError.
    [{ merchants: { acme: null } }, /merchants\.acme: must be an object/],
    [{ merchants: { acme: { ...good, operations: { charge: null } } } }, /operations\.charge: must be an object/],
  ];
  for (const [doc, re] of cases) {
    assert.throws(() => parseMerchants(doc), (e: unknown) => e instanceof ConfigError && re.test(e.message) && !e.message.includes(good.secret), JSON.stringify(doc));
  }
  const dir = mkdtempSync(join(tmpdir(), 'gavel-m-'));
  writeFileSync(join(dir, 'm.json'), '{not json');
  assert.throws(() => loadMerchants(join(dir, 'm.json')), /GAVEL_MERCHANTS_FILE/);
  // A secret written without its quotes: V8's message would quote the characters around the error.
  writeFileSync(join(dir, 'm.json'), '{"merchants": {"acme": {"secret": whsec-4f9a8b7c6d5e}}}');
  assert.throws(() => loadMerchants(join(dir, 'm.json')), (e: unknown) => e instanceof ConfigError && /GAVEL_MERCHANTS_FILE: cannot read .* as JSON \(unexpected character "w"\)/.test(e.message) && !/whsec-/.test(e.message));
});

test('names, types and paths at their edges: what is not as docs/executions.md describes is refused by its key', () => {
  const name64 = 'n'.repeat(64);
  const edges = parseMerchants({ merchants: { [name64]: { ...good, base_url: 'http://127.0.0.1:7444', operations: { [name64]: { method: 'DELETE', path: '/v1.2/a_b-c~d/%41' } } } } });
  const m = edges.get(name64)!;
  assert.equal(m.urlOf(m.operations.get(name64)!).toString(), 'http://127.0.0.1:7444/v1.2/a_b-c~d/%41', 'plain http, and 64-character names, load');
  const cases: [unknown, RegExp][] = [
    [{ merchants: { ['n'.repeat(65)]: good } }, /merchants\.n{65}: a merchant name is 1-64/],
    [{ merchants: { 'a b': good } }, /merchants\.a b: a merchant name/],
    [{ merchants: { '': good } }, /merchants\.: a merchant name/],
    [{ merchants: { acme: { ...good, operations: { '': good.operations.charge } } } }, /operations\.: an operation name/],
    [{ merchants: { acme: { ...good, operations: { ['o'.repeat(65)]: good.operations.charge } } } }, /operations\.o{65}: an operation name/],
    [{ merchants: [] }, /merchants: must be an object mapping/],
    [{ merchants: 'acme' }, /merchants: must be an object mapping/],
    [{ merchants: null }, /merchants: must be an object mapping/],
    // Only a string is a URL: an array holding one would pass String() and the URL parser.
    [{ merchants: { acme: { ...good, base_url: ['https://pay.example/api'] } } }, /merchants\.acme\.base_url: must be a string/],
    [{ merchants: { acme: { ...good, base_url: 'https://user@pay.example/api' } } }, /merchants\.acme\.base_url: must carry no query, fragment or credentials/],
    [{ merchants: { acme: { ...good, secret: 12345678901234567 } } }, /merchants\.acme\.secret: must be a string/],
    [{ merchants: { acme: { ...good, secret: Array(20).fill('s') } } }, /merchants\.acme\.secret: must be a string/],
    [{ merchants: { acme: { ...good, timeout_ms: null } } }, /merchants\.acme\.timeout_ms: must be an integer between 1 and 120000/],
    [{ merchants: { acme: { ...good, timeout_ms: '5000' } } }, /merchants\.acme\.timeout_ms/],
    [{ merchants: { acme: { ...good, operations: 'charge' } } }, /merchants\.acme\.operations: must be a non-empty object/],
    [{ merchants: { acme: { ...good, operations: [good.operations.charge] } } }, /merchants\.acme\.operations: must be a non-empty object/],
  ];
  // A dot spelt %2e is a dot to the URL parser: each of these would climb out of the base path.
  for (const path of ['/a/%2e%2e/admin', '/%2E%2e/admin', '/.%2e/x', '/%2e./x', '/x/%2e%2E']) {
    cases.push([{ merchants: { acme: { ...good, operations: { charge: { method: 'POST', path } } } } }, /operations\.charge\.path: must be an absolute path/]);
  }
  for (const [doc, re] of cases) {
    assert.throws(() => parseMerchants(doc), (e: unknown) => e instanceof ConfigError && re.test(e.message), JSON.stringify(doc));
  }
});

test('the file: one that cannot be read is named, and an error inside it names the file and the key', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gavel-m-'));
  const missing = join(dir, 'missing.json');
  assert.throws(() => loadMerchants(missing), (e: unknown) => e instanceof ConfigError && e.key === 'GAVEL_MERCHANTS_FILE' && e.message.startsWith(`configuration GAVEL_MERCHANTS_FILE: cannot read ${missing} (ENOENT`));
  const file = join(dir, 'm.json');
  writeFileSync(file, JSON.stringify({ merchants: { acme: { ...good, timeout_ms: 0 } } }));
  assert.throws(() => loadMerchants(file), (e: unknown) => e instanceof ConfigError && e.key === `GAVEL_MERCHANTS_FILE ${file}: merchants.acme.timeout_ms`
    && e.message === `configuration GAVEL_MERCHANTS_FILE ${file}: merchants.acme.timeout_ms: must be an integer between 1 and 120000`);
  writeFileSync(file, JSON.stringify({ merchants: { acme: good } }));
  assert.equal(loadMerchants(file).get('acme')!.timeoutMs, 2000);
});

test('signature: HMAC-SHA256 over the time, method, path, idempotency key, execution id and body, verified by the merchant side', () => {
  const r = { method: 'POST', path: '/charges?v=2', idempotencyKey: 'order-1', executionId: 'exe_1', body: '{"a":1}' };
  const h = signatureHeader('k'.repeat(20), r, 1700000000);
  assert.match(h, /^t=1700000000,v1=[0-9a-f]{64}$/);
  assert.equal(verifySignature('k'.repeat(20), r, h), true);
  // A captured request replayed with anything changed no longer verifies.
  for (const changed of [{ body: '{"a":2}' }, { idempotencyKey: 'order-2' }, { executionId: 'exe_2' }, { path: '/refunds?v=2' }, { path: '/charges' }, { method: 'PUT' }]) {
    assert.equal(verifySignature('k'.repeat(20), { ...r, ...changed }, h), false, JSON.stringify(changed));
  }
  // Fields cannot trade characters across their boundary (a dot is allowed in a path and in a nonce).
  const shifted = signatureHeader('k'.repeat(20), { method: 'POST', path: '/refund', idempotencyKey: 'v2.order-1', executionId: 'exe_1', body: '{}' }, 1700000000);
  assert.equal(verifySignature('k'.repeat(20), { method: 'POST', path: '/refund.v2', idempotencyKey: 'order-1', executionId: 'exe_1', body: '{}' }, shifted), false);
  const keyShifted = signatureHeader('k'.repeat(20), { ...r, idempotencyKey: 'order-1e', executionId: 'xe_1' }, 1700000000);
  assert.equal(verifySignature('k'.repeat(20), r, keyShifted), false, 'the idempotency key and the execution id cannot trade characters either');
  assert.equal(verifySignature('x'.repeat(20), r, h), false);
  assert.equal(verifySignature('k'.repeat(20), r, 'garbage'), false);
  // The time is signed: a captured request sent again under a fresh time does not verify.
  assert.equal(verifySignature('k'.repeat(20), r, h.replace('t=1700000000', 't=1700000300')), false);
  assert.equal(verifySignature('k'.repeat(20), r, `x${h}`), false, 'the header is exactly t=…,v1=…');
});

test('an operation may name where its payload carries the amount: pointers, or a fixed currency; anything else is refused by its key', () => {
  const op = (amount: unknown) => ({ merchants: { acme: { ...good, operations: { charge: { method: 'POST', path: '/charges', amount } } } } });
  const charge = (amount: unknown) => parseMerchants(op(amount)).get('acme')!.operations.get('charge');
  assert.deepEqual(charge({ minor: '/amount', currency: '/currency' })!.amount, { minor: '/amount', currency: '/currency' });
  assert.deepEqual(charge({ minor: '/total/a~1b~0c/0', currency: 'EUR' })!.amount, { minor: '/total/a~1b~0c/0', currency: 'EUR' });
  assert.equal(parseMerchants({ merchants: { acme: good } }).get('acme')!.operations.get('charge')!.amount, undefined, 'opt-in: none unless configured');
  const cases: [unknown, RegExp][] = [
    [null, /operations\.charge\.amount: must be an object \{minor, currency\}/],
    ['/amount', /operations\.charge\.amount: must be an object/],
    [{ minor: '/amount', currency: 'EUR', max: 5 }, /operations\.charge\.amount\.max: unknown key \(known: minor, currency\)/],
    [{ currency: 'EUR' }, /operations\.charge\.amount\.minor: must be a JSON Pointer into the payload/],
    [{ minor: 'amount', currency: 'EUR' }, /operations\.charge\.amount\.minor: must be a JSON Pointer/],
    [{ minor: '', currency: 'EUR' }, /operations\.charge\.amount\.minor: must be a JSON Pointer/],
    [{ minor: '/a~2', currency: 'EUR' }, /operations\.charge\.amount\.minor: must be a JSON Pointer/],
    [{ minor: 100, currency: 'EUR' }, /operations\.charge\.amount\.minor: must be a JSON Pointer/],
    [{ minor: '/amount' }, /operations\.charge\.amount\.currency: must be a JSON Pointer into the payload, such as "\/currency", or the operation's fixed currency/],
    [{ minor: '/amount', currency: 'eur' }, /operations\.charge\.amount\.currency: must be/],
    [{ minor: '/amount', currency: 'EURO' }, /operations\.charge\.amount\.currency: must be/],
    [{ minor: '/amount', currency: 'currency' }, /operations\.charge\.amount\.currency: must be/],
  ];
  for (const [amount, re] of cases) {
    assert.throws(() => parseMerchants(op(amount)), (e: unknown) => e instanceof ConfigError && re.test(e.message) && !e.message.includes('\n'), JSON.stringify(amount));
  }
});
