// A log that is not honest, and keys that are not witnesses' (a mutation audit in session 52 found
// these checks unpinned): a consistency proof with an element past the end proves a fork (RFC 9162
// 2.1.4.2, "if sn is 0, stop and fail"), and a line signed by a type 0x01 note key, the log's own
// say, is never a witness cosignature (C2SP tlog-cosignature: type 0x04 only).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync, randomBytes, sign as edSign } from 'node:crypto';
import { verifyConsistency } from '../../../src/domain/auditlog/verify.ts';
import { nodeHash } from '../../../src/domain/auditlog/hash.ts';
import { decideCheckpoint } from '../../../src/domain/auditlog/witness.ts';
import { verifyCosignatures, cosignatureMessage } from '../../../src/domain/auditlog/cosignature.ts';
import { keyId, formatSignatureLine, SIG_TYPE_ED25519 } from '../../../src/domain/auditlog/note.ts';

test('a (3,4) consistency proof with an element past the end (sn reaches 0) does not verify, and the witness does not cosign the fork', () => {
  const [p0, p1, p2, a] = [0, 1, 2, 3].map(() => new Uint8Array(randomBytes(32)));
  // A malicious log chooses roots it can "prove" with one extra path element.
  const rootM = nodeHash(a!, nodeHash(p2!, p0!));
  const rootN = nodeHash(a!, nodeHash(p2!, nodeHash(p0!, p1!)));
  // The honest extension of rootM (= H(a, X)) to size 4 would be H(a, H(X, l3)); rootN is not of that form.
  assert.equal(verifyConsistency(3, 4, [p0!, p1!, p2!, a!], rootM, rootN), false);
  const d = decideCheckpoint({ size: 3, root: rootM }, 3, [p0!, p1!, p2!, a!], { origin: 'o', size: 4, root: rootN });
  assert.equal(d.kind, 'inconsistent');
});

test('a cosignature-shaped line under a type 0x01 key is not a witness cosignature', () => {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const pub = new Uint8Array(Buffer.from(publicKey.export({ format: 'jwk' }).x as string, 'base64url'));
  const text = `example.com/log\n3\n${Buffer.alloc(32).toString('base64')}\n`;
  const ts = 1_700_000_000;
  const sig = new Uint8Array(edSign(null, cosignatureMessage(text, ts), privateKey));
  const stamp = new Uint8Array(8); new DataView(stamp.buffer).setBigUint64(0, BigInt(ts));
  const line = formatSignatureLine('logkey', keyId('logkey', SIG_TYPE_ED25519, pub), new Uint8Array([...stamp, ...sig]));
  const note = `${text}\n${line}`;
  const key = { name: 'logkey', type: SIG_TYPE_ED25519, keyId: keyId('logkey', SIG_TYPE_ED25519, pub), publicKey: pub };
  assert.deepEqual(verifyCosignatures(note, [key]), []);
});
