// Checks a mutation audit found unguarded in the log's verifiers: each test fails on a one-line
// breakage that no other test noticed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EMPTY_ROOT, leafHash, nodeHash } from '../../../src/domain/auditlog/hash.ts';
import { appendLeaves, consistencyProof, inclusionProof, nodeKey, type StoredNode } from '../../../src/domain/auditlog/tree.ts';
import { rootFromInclusionProof, verifyConsistency, verifyInclusion } from '../../../src/domain/auditlog/verify.ts';
import { decideCheckpoint } from '../../../src/domain/auditlog/witness.ts';
import { formatCheckpoint, signCheckpoint } from '../../../src/domain/auditlog/checkpoint.ts';
import { bytesEqual, fromBase64 } from '../../../src/domain/auditlog/bytes.ts';
import { cosignCheckpoint, cosignerKeyId, verifyCosignatures } from '../../../src/domain/auditlog/cosignature.ts';
import { ed25519NoteSigner, formatSignatureLine, formatVkey, openNote, parseNote, parseVkey, signNote, SIG_TYPE_COSIGNATURE_V1, SIG_TYPE_ED25519 } from '../../../src/domain/auditlog/note.ts';
import { AuditLogError } from '../../../src/domain/auditlog/errors.ts';
import { TestSigner } from './support.ts';

const leaf = (i: number) => leafHash(new TextEncoder().encode(`leaf ${i}`));

function tree(n: number) {
  const store = new Map<string, StoredNode>();
  const read = (l: number, i: number) => store.get(nodeKey(l, i))?.hash;
  const roots: Uint8Array[] = [];
  let size = 0;
  for (let i = 0; i < n; i++) {
    const r = appendLeaves(size, [leaf(i)], read);
    for (const x of r.nodes) store.set(nodeKey(x.level, x.index), x);
    size = r.size;
    roots[size] = r.root;
  }
  return { read, roots };
}

const code = (f: () => unknown): string | undefined => {
  try { f(); return undefined; } catch (e) { return e instanceof AuditLogError ? e.code : String(e); }
};

test('inclusion: a valid path does not verify for an index at or beyond the tree size', () => {
  const { read, roots } = tree(4);
  const root = roots[4] as Uint8Array;
  const proof = inclusionProof(1, 4, read);
  assert.equal(verifyInclusion(leaf(1), 1, 4, proof, root), true);
  // Leaf 1's path, claimed for index 5 of a tree of 4 (5 = 0b101 walks the same left/right turns).
  assert.equal(rootFromInclusionProof(leaf(1), 5, 4, proof), undefined);
  assert.equal(verifyInclusion(leaf(1), 5, 4, proof, root), false);
  assert.equal(verifyInclusion(leaf(1), 4, 4, proof, root), false);
  // A size-1 tree's root is its leaf: the leaf, claimed as index 1 (= size) with an empty path, is not in it.
  assert.equal(rootFromInclusionProof(leaf(0), 1, 1, []), undefined);
  assert.equal(verifyInclusion(leaf(0), 1, 1, [], leaf(0)), false);
});

test('consistency: an old size above the new one never verifies, whatever the proof', () => {
  // Size 3 "extending" to size 2 with [rootM, c] and rootN = H(rootM, c): the walk alone would accept it.
  const a = leaf(0);
  const c = leaf(1);
  assert.equal(verifyConsistency(3, 2, [a, c], a, nodeHash(a, c)), false);
});

test('appending past the largest safe tree size is refused as such, before any node is read', () => {
  assert.equal(code(() => appendLeaves(Number.MAX_SAFE_INTEGER, [leaf(0)], () => undefined)), 'invalid_size');
});

test('inclusion: a path longer than the tree allows does not verify (RFC 9162 2.1.3.2: sn reaches 0 early)', () => {
  const { roots } = tree(2);
  const root2 = roots[2] as Uint8Array;
  // In a tree of 2, leaf 1's path is [leaf 0]. Claimed as leaf 0 of a tree of size 1, with that path:
  // a size-1 tree's path is empty, so the extra hash must refuse, not fold into the size-2 root.
  assert.equal(rootFromInclusionProof(leaf(1), 0, 1, [leaf(0)]), undefined);
  assert.equal(verifyInclusion(leaf(1), 0, 1, [leaf(0)], root2), false);
  // And a correct path with one hash appended.
  const { read, roots: r5 } = tree(5);
  const good = inclusionProof(4, 5, read);
  assert.equal(verifyInclusion(leaf(4), 4, 5, good, r5[5] as Uint8Array), true);
  const extra = nodeHash(leaf(9), leaf(9));
  assert.equal(rootFromInclusionProof(leaf(4), 4, 5, [...good, extra]), undefined);
});

test('consistency: m = n needs an empty proof, even when the roots are equal', () => {
  const { read, roots } = tree(6);
  const r = roots[6] as Uint8Array;
  assert.equal(verifyConsistency(6, 6, [], r, r), true);
  assert.equal(verifyConsistency(6, 6, consistencyProof(3, 6, read), r, r), false);
  assert.equal(verifyConsistency(6, 6, [r], r, r), false);
});

test('witness: the same checkpoint again with a non-empty proof is not cosigned', () => {
  const { read, roots } = tree(6);
  const root = roots[6] as Uint8Array;
  const cp = { origin: 'o', size: 6, root };
  assert.deepEqual(decideCheckpoint({ size: 6, root }, 6, [], cp), { kind: 'accept', advance: false });
  assert.deepEqual(decideCheckpoint({ size: 6, root }, 6, consistencyProof(3, 6, read), cp), { kind: 'inconsistent' });
});

test('signed notes: a signature line is matched by name and key ID, both', async () => {
  const s = new TestSigner();
  const name = 'a.example/log';
  const pub = await s.publicKey('a');
  const key = parseVkey(formatVkey(name, SIG_TYPE_ED25519, pub));
  const note = await signCheckpoint({ origin: name, size: 1, root: leaf(0) }, ed25519NoteSigner(name, pub, (m) => s.sign('a', m)));
  assert.deepEqual(openNote(note, [key]).verifiedBy, [key]);
  // The same signature bytes (key ID and signature) under another name: not this key's line.
  const renamed = note.replace(`\u2014 ${name} `, '\u2014 b.example/log ');
  assert.notEqual(renamed, note);
  assert.equal(code(() => openNote(renamed, [key])), 'unverified_note');
});

test('signed notes: a cosigned checkpoint opens with the log key even when witness keys are passed beside it', async () => {
  const s = new TestSigner();
  const origin = 'gavel.example/audit';
  const logPub = await s.publicKey('log');
  const wPub = await s.publicKey('w');
  const logKey = parseVkey(formatVkey(origin, SIG_TYPE_ED25519, logPub));
  const wKey = parseVkey(formatVkey('w.example', SIG_TYPE_COSIGNATURE_V1, wPub));
  const note = await signCheckpoint({ origin, size: 1, root: leaf(0) }, ed25519NoteSigner(origin, logPub, (m) => s.sign('log', m)));
  const cosigned = note + await cosignCheckpoint(parseNote(note).text, { name: 'w.example', publicKey: wPub, sign: (m) => s.sign('w', m) }, 1_700_000_000);
  // A cosignature is not a plain Ed25519 note signature: openNote ignores type 0x04 keys.
  assert.deepEqual(openNote(cosigned, [logKey, wKey]).verifiedBy, [logKey]);
});

test('consistency: a malformed old root is false even where the walk never hashes it', () => {
  // m = 4 is the left subtree of 8: the walk carries rootM through unchanged and hashes it into rootN.
  const short = new Uint8Array(31).fill(7);
  const p = leaf(5);
  assert.equal(verifyConsistency(4, 8, [p], short, nodeHash(short, p)), false);
});

test('bytes: equality needs equal lengths; base64 must be canonical', () => {
  assert.equal(bytesEqual(new Uint8Array(0), new Uint8Array(32)), false);
  assert.equal(bytesEqual(new Uint8Array([1, 2]), new Uint8Array([1, 2, 0])), false);
  // "QR==" decodes to the byte of "QQ==" with a padding bit set: another text for the same bytes.
  assert.equal(code(() => fromBase64('QR==')), 'malformed_note');
  assert.deepEqual(fromBase64('QQ=='), new Uint8Array([0x41]));
});

test('vkeys: a key name with "+" and a key of the wrong length are refused', async () => {
  const pub = await new TestSigner().publicKey('a');
  assert.equal(code(() => formatVkey('a+b', SIG_TYPE_ED25519, pub)), 'malformed_note');
  // 33 key bytes, its key ID computed over them: well formed but no Ed25519 key.
  const long = formatVkey('a.example/log', SIG_TYPE_ED25519, new Uint8Array([...pub, 0]));
  assert.equal(code(() => parseVkey(long)), 'malformed_note');
});

test('signed notes: a known signature that fails rejects the note even beside one that verifies', async () => {
  const s = new TestSigner();
  const signer = async (name: string, k: string) => ed25519NoteSigner(name, await s.publicKey(k), (m) => s.sign(k, m));
  const vkey = async (name: string, k: string) => parseVkey(formatVkey(name, SIG_TYPE_ED25519, await s.publicKey(k)));
  const [aKey, bKey] = [await vkey('a.example/log', 'a'), await vkey('b.example/log', 'b')];
  const aLine = (await signNote('other\n', [await signer('a.example/log', 'a')])).split('\n\n')[1] as string;
  const bNote = await signNote('text\n', [await signer('b.example/log', 'b')]);
  assert.deepEqual(openNote(bNote, [aKey, bKey]).verifiedBy, [bKey]);
  assert.equal(code(() => openNote(bNote + aLine, [aKey, bKey])), 'unverified_note');
  // A note's text must end with a newline to be signed.
  assert.equal(await signNote('text', [await signer('a.example/log', 'a')]).then(() => 'signed', (e) => (e as AuditLogError).code), 'malformed_note');
});

test('checkpoints: the origin and extension lines must be non-empty single lines', () => {
  const root = leaf(0);
  for (const origin of ['', 'a\nb']) assert.equal(code(() => formatCheckpoint({ origin, size: 1, root })), 'malformed_note', JSON.stringify(origin));
  for (const ext of ['', 'x\ny']) assert.equal(code(() => formatCheckpoint({ origin: 'o', size: 1, root, extensions: [ext] })), 'malformed_note', JSON.stringify(ext));
  assert.equal(formatCheckpoint({ origin: 'o', size: 1, root, extensions: ['x'] }).split('\n')[3], 'x');
});

test('witness: holding the empty tree, a proof from old size 0 is a bad request, as when holding nothing', () => {
  const { read, roots } = tree(3);
  const cp = { origin: 'o', size: 3, root: roots[3] as Uint8Array };
  const proof = consistencyProof(1, 3, read);
  assert.equal(decideCheckpoint(null, 0, proof, cp).kind, 'bad_request');
  assert.equal(decideCheckpoint({ size: 0, root: EMPTY_ROOT }, 0, proof, cp).kind, 'bad_request');
  assert.deepEqual(decideCheckpoint({ size: 0, root: EMPTY_ROOT }, 0, [], cp), { kind: 'accept', advance: true });
});

test('cosignatures: a known witness line too short to hold a timestamp rejects the note as a failing signature, not as a crash', async () => {
  const s = new TestSigner();
  const name = 'witness.example/w1';
  const pub = await s.publicKey('w');
  const key = parseVkey(formatVkey(name, SIG_TYPE_COSIGNATURE_V1, pub));
  const short = formatSignatureLine(name, cosignerKeyId(name, pub), new Uint8Array(3));
  assert.throws(() => verifyCosignatures(`o\n1\n${Buffer.from(leaf(0)).toString('base64')}\n\n${short}`, [key]),
    (e: unknown) => e instanceof AuditLogError && e.code === 'unverified_note' && /does not verify/.test(e.message));
});
