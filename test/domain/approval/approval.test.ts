// Pure approval domain: the canonical statement, signature verification, key parsing, exact
// coverage of a request and the effective status. No I/O.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync, sign } from 'node:crypto';
import fc from 'fast-check';
import { approvalStatement, effectiveStatus, parseApprovalPublicKey, uncoveredField, verifyApproval, type ObligationFacts } from '../../../src/domain/approval/index.ts';

const facts: ObligationFacts = {
  approval_request_id: 'apr_01jz0000000000000000000000', project_id: 'prj_01jz0000000000000000000000', agent: 'did:key:z6Mkabc',
  action: 'pay', resource: 'resource://shop/1', amount: { minor: 50_000, currency: 'EUR' }, intent: null, execution: null, policy_version: 3,
  matched_rules: null, expires_at: '2030-01-01T00:00:00.000Z',
};

function keypair() {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  return { raw: new Uint8Array(Buffer.from(publicKey.export({ format: 'jwk' }).x!, 'base64url')), privateKey, x: publicKey.export({ format: 'jwk' }).x! };
}

test('the statement is RFC 8785 JSON with sorted keys and a type tag, the same whatever the field order', () => {
  const { text } = approvalStatement(facts);
  assert.equal(text, '{"action":"pay","agent":"did:key:z6Mkabc","amount":{"currency":"EUR","minor":50000},"approval_request_id":"apr_01jz0000000000000000000000","expires_at":"2030-01-01T00:00:00.000Z","intent":null,"policy_version":3,"project_id":"prj_01jz0000000000000000000000","resource":"resource://shop/1","type":"gavel-approval/v1"}');
  const reordered = Object.fromEntries(Object.entries(facts).reverse()) as unknown as ObligationFacts;
  assert.equal(approvalStatement(reordered).text, text);
});

test('a statement of form 2 names the matched rules; one of form 1 (obligations opened before) keeps its bytes', () => {
  const v2 = approvalStatement({ ...facts, matched_rules: ['big', 'eu'] });
  assert.equal(v2.text, '{"action":"pay","agent":"did:key:z6Mkabc","amount":{"currency":"EUR","minor":50000},"approval_request_id":"apr_01jz0000000000000000000000","expires_at":"2030-01-01T00:00:00.000Z","intent":null,"matched_rules":["big","eu"],"policy_version":3,"project_id":"prj_01jz0000000000000000000000","resource":"resource://shop/1","type":"gavel-approval/v1"}');
  assert.ok(!approvalStatement(facts).text.includes('matched_rules'));
  const k = keypair();
  const sig = new Uint8Array(sign(null, v2.bytes, k.privateKey));
  assert.equal(verifyApproval(k.raw, { ...facts, matched_rules: ['big', 'eu'] }, sig), true);
  for (const rules of [['big'], ['eu', 'big'], [], null]) assert.equal(verifyApproval(k.raw, { ...facts, matched_rules: rules }, sig), false, JSON.stringify(rules));
});

test('a signature verifies over the exact statement only: any changed field, key or byte fails', () => {
  const k = keypair();
  const sig = new Uint8Array(sign(null, approvalStatement(facts).bytes, k.privateKey));
  assert.equal(verifyApproval(k.raw, facts, sig), true);
  const changes: Partial<ObligationFacts>[] = [
    { amount: { minor: 50_001, currency: 'EUR' } }, { amount: { minor: 50_000, currency: 'USD' } }, { amount: null },
    { agent: 'did:key:z6Mkabd' }, { action: 'refund' }, { resource: 'resource://shop/2' }, { intent: 'x' },
    { policy_version: 4 }, { expires_at: '2030-01-01T00:00:00.001Z' }, { approval_request_id: 'apr_01jz0000000000000000000001' },
    { project_id: 'prj_01jz0000000000000000000001' },
  ];
  for (const c of changes) assert.equal(verifyApproval(k.raw, { ...facts, ...c }, sig), false, JSON.stringify(c));
  assert.equal(verifyApproval(keypair().raw, facts, sig), false);
  const flipped = new Uint8Array(sig);
  flipped[10]! ^= 1;
  assert.equal(verifyApproval(k.raw, facts, flipped), false);
  assert.equal(verifyApproval(k.raw, facts, sig.subarray(0, 63)), false);
  assert.equal(verifyApproval(new Uint8Array(31), facts, sig), false);
});

test('verification never throws on hostile bytes', () => {
  fc.assert(fc.property(fc.uint8Array({ maxLength: 80 }), fc.uint8Array({ maxLength: 80 }), (key, sig) => {
    assert.equal(typeof verifyApproval(key, facts, sig), 'boolean');
  }));
});

test('approval keys: raw base64url or a public Ed25519 JWK; private, wrong-type and malformed keys refused', () => {
  const k = keypair();
  const raw = parseApprovalPublicKey(k.x);
  assert.ok(raw.ok);
  assert.deepEqual(raw.ok && raw.raw, k.raw);
  assert.ok(parseApprovalPublicKey({ kty: 'OKP', crv: 'Ed25519', x: k.x }).ok);
  // Members that agree with a verification key are fine: RFC 8037's alg, RFC 9864's, WebCrypto's export.
  for (const extra of [{ alg: 'EdDSA', use: 'sig', kid: 'k1' }, { alg: 'Ed25519' }, { key_ops: ['verify'], ext: true }]) {
    assert.ok(parseApprovalPublicKey({ kty: 'OKP', crv: 'Ed25519', x: k.x, ...extra }).ok, JSON.stringify(extra));
  }
  const cases: [unknown, string][] = [
    [{ kty: 'OKP', crv: 'Ed25519', x: k.x, d: k.x }, 'private_key'],
    [{ kty: 'EC', crv: 'P-256', x: k.x }, 'key_type'],
    [{ kty: 'OKP', crv: 'X25519', x: k.x }, 'key_type'],
    // A JWK that says it is for another algorithm or for anything but verifying (RFC 7517 §4.2-4.4).
    [{ kty: 'OKP', crv: 'Ed25519', x: k.x, alg: 'ES256' }, 'key_type'],
    [{ kty: 'OKP', crv: 'Ed25519', x: k.x, alg: 'ECDH-ES' }, 'key_type'],
    [{ kty: 'OKP', crv: 'Ed25519', x: k.x, alg: 42 }, 'key_type'],
    [{ kty: 'OKP', crv: 'Ed25519', x: k.x, use: 'enc' }, 'key_use'],
    [{ kty: 'OKP', crv: 'Ed25519', x: k.x, key_ops: ['encrypt', 'wrapKey'] }, 'key_use'],
    [{ kty: 'OKP', crv: 'Ed25519', x: k.x, key_ops: [] }, 'key_use'],
    [{ kty: 'OKP', crv: 'Ed25519', x: k.x, key_ops: 'verify' }, 'key_use'],
    [{ kty: 'OKP', crv: 'Ed25519', x: k.x, use: 'enc', key_ops: ['verify'] }, 'key_use'],
    [k.x + 'A', 'malformed_key'],
    [k.x.slice(0, -2), 'malformed_key'],
    [`${k.x.slice(0, -1)}=`, 'malformed_key'],
    ['', 'malformed_key'],
    [42, 'malformed_key'],
    [null, 'malformed_key'],
    [[k.x], 'malformed_key'],
    [{ kty: 'OKP', crv: 'Ed25519' }, 'malformed_key'],
    // The identity: OpenSSL refuses every signature under it, so it could never approve anything.
    [Buffer.from('01'.padEnd(64, '0'), 'hex').toString('base64url'), 'malformed_key'],
    [{ kty: 'OKP', crv: 'Ed25519', x: Buffer.from('26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05', 'hex').toString('base64url') }, 'malformed_key'],
  ];
  for (const [input, code] of cases) {
    const r = parseApprovalPublicKey(input);
    assert.equal(r.ok, false, JSON.stringify(input));
    assert.equal(!r.ok && r.code, code, JSON.stringify(input));
  }
  fc.assert(fc.property(fc.anything(), (x) => { assert.equal(typeof parseApprovalPublicKey(x).ok, 'boolean'); }));
});

test('approval keys: every point of small order, every encoding of y >= p, and base64 that is not canonical base64url are refused', () => {
  // The eight points of order 1, 2, 4 and 8 (both signs where x is not 0; x = 0 with the sign bit set is no encoding).
  const small = ['01', 'ec' + 'ff'.repeat(30) + '7f', '00', '00'.repeat(31) + '80', 'c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a',
    'c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa', '26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05',
    '26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85', '01' + '00'.repeat(30) + '80'].map((h) => Buffer.from(h.padEnd(64, '0'), 'hex'));
  // y = p + d for d in 0..18, with either sign bit: 2^255 - 19 + d does not reduce to one encoding.
  const P = 2n ** 255n - 19n;
  const above = Array.from({ length: 38 }, (_, i) => {
    const n = P + BigInt(i >> 1) + (BigInt(i & 1) << 255n);
    return Buffer.from(n.toString(16).padStart(64, '0'), 'hex').reverse();
  });
  for (const raw of [...small, ...above]) {
    const x = raw.toString('base64url');
    for (const input of [x, { kty: 'OKP', crv: 'Ed25519', x }]) assert.equal(parseApprovalPublicKey(input).ok, false, raw.toString('hex'));
  }
  let k = keypair();
  while (!/[-_]/.test(k.x)) k = keypair();
  for (const x of [k.x.replace(/-/g, '+').replace(/_/g, '/'), `${k.x}=`, ` ${k.x}`, `${k.x}\n`]) {
    for (const input of [x, { kty: 'OKP', crv: 'Ed25519', x }]) {
      const r = parseApprovalPublicKey(input);
      assert.equal(!r.ok && r.code, 'malformed_key', JSON.stringify(input));
    }
  }
});

test('coverage is exact: agent, action, resource, amount (both ways, and currency) and intent', () => {
  const req = { agent: facts.agent, action: 'pay', resource: 'resource://shop/1', amount: { minor: 50_000, currency: 'EUR' } };
  assert.equal(uncoveredField(facts, req), null);
  assert.equal(uncoveredField(facts, { ...req, amount: { minor: 49_999, currency: 'EUR' } }), 'amount');
  assert.equal(uncoveredField(facts, { ...req, amount: { minor: 50_000, currency: 'USD' } }), 'amount');
  assert.equal(uncoveredField(facts, { ...req, amount: undefined }), 'amount');
  assert.equal(uncoveredField({ ...facts, amount: null }, req), 'amount');
  assert.equal(uncoveredField({ ...facts, amount: null }, { ...req, amount: undefined }), null);
  assert.equal(uncoveredField(facts, { ...req, intent: 'i' }), 'intent');
  assert.equal(uncoveredField(facts, { ...req, policy_version: facts.policy_version }), null);
  assert.equal(uncoveredField(facts, { ...req, policy_version: facts.policy_version + 1 }), 'policy_version', 'the version the statement names');
  const call = '{"merchant":"acme","operation":"charge","payload":{"to":"DE89"}}';
  assert.equal(uncoveredField(facts, { ...req, execution: call }), 'execution', 'an approval given without a call covers none');
  assert.equal(uncoveredField({ ...facts, execution: call }, req), 'execution');
  assert.equal(uncoveredField({ ...facts, execution: call }, { ...req, execution: call.replace('DE89', 'XX00') }), 'execution', 'another payload is another call');
  assert.equal(uncoveredField({ ...facts, execution: call }, { ...req, execution: call }), null);
  // The statement names the call only where there is one, so statements without it keep their bytes.
  assert.ok(!approvalStatement(facts).text.includes('execution'));
  assert.deepEqual(approvalStatement({ ...facts, execution: call }).statement.execution, { merchant: 'acme', operation: 'charge', payload: { to: 'DE89' } });
  assert.equal(uncoveredField({ ...facts, intent: 'i' }, { ...req, intent: 'i' }), null);
  assert.equal(uncoveredField(facts, { ...req, agent: 'did:key:other' }), 'agent');
  assert.equal(uncoveredField(facts, { ...req, action: 'refund' }), 'action');
  assert.equal(uncoveredField(facts, { ...req, resource: 'resource://shop/10' }), 'resource');
});

test('expiry is read, not written: pending and approved past expires_at are expired; final states stay', () => {
  const at = new Date('2030-01-01T00:00:00.000Z');
  const before = new Date(at.getTime() - 1);
  for (const s of ['pending', 'approved']) {
    assert.equal(effectiveStatus({ status: s, expires_at: facts.expires_at }, before), s);
    assert.equal(effectiveStatus({ status: s, expires_at: facts.expires_at }, at), 'expired');
  }
  for (const s of ['consumed', 'withdrawn']) assert.equal(effectiveStatus({ status: s, expires_at: facts.expires_at }, at), s);
});
