import { test } from 'node:test';
import assert from 'node:assert/strict';
import { leafHash } from '../../../src/domain/auditlog/hash.ts';
import { appendLeaves, consistencyProof, nodeKey, type StoredNode } from '../../../src/domain/auditlog/tree.ts';
import {
  checkAddCheckpoint,
  decideCheckpoint,
  decisionStatus,
  formatAddCheckpointRequest,
  parseAddCheckpointRequest,
} from '../../../src/domain/auditlog/witness.ts';
import { signCheckpoint } from '../../../src/domain/auditlog/checkpoint.ts';
import { ed25519NoteSigner, formatVkey, parseVkey, SIG_TYPE_ED25519 } from '../../../src/domain/auditlog/note.ts';
import { TestSigner } from './support.ts';

function log(n: number, tag = '') {
  const store = new Map<string, StoredNode>();
  const read = (l: number, i: number) => store.get(nodeKey(l, i))?.hash;
  const roots: Uint8Array[] = [];
  let size = 0;
  for (let i = 0; i < n; i++) {
    const r = appendLeaves(size, [leafHash(new TextEncoder().encode(`${tag}${i}`))], read);
    for (const x of r.nodes) store.set(nodeKey(x.level, x.index), x);
    size = r.size;
    roots[size] = r.root;
  }
  return { read, roots };
}

test('decideCheckpoint follows tlog-witness: accept, 409 with size, 400 rollback, 422 fork', () => {
  const { read, roots } = log(20);
  const fork = log(20, 'fork');
  const cp = (size: number, root = roots[size] as Uint8Array) => ({ origin: 'o', size, root });
  const r = (n: number) => roots[n] as Uint8Array;

  assert.deepEqual(decideCheckpoint(null, 0, [], cp(5)), { kind: 'accept', advance: true });
  assert.deepEqual(decideCheckpoint(null, 3, [], cp(5)), { kind: 'conflict', size: 0, reason: 'old_size_mismatch' });
  assert.equal(decideCheckpoint(null, 0, [r(1)], cp(5)).kind, 'bad_request');

  const held = { size: 5, root: r(5) };
  assert.deepEqual(decideCheckpoint(held, 5, consistencyProof(5, 12, read), cp(12)), { kind: 'accept', advance: true });
  assert.deepEqual(decideCheckpoint(held, 5, [], cp(5)), { kind: 'accept', advance: false });
  assert.deepEqual(decideCheckpoint(held, 4, consistencyProof(4, 12, read), cp(12)), { kind: 'conflict', size: 5, reason: 'old_size_mismatch' });
  assert.deepEqual(decideCheckpoint(held, 0, [], cp(12)), { kind: 'conflict', size: 5, reason: 'old_size_mismatch' });
  // docs/audit-log.md's order: the held size is checked before an old size 0's proof must be empty.
  assert.deepEqual(decideCheckpoint(held, 0, [r(1)], cp(12)), { kind: 'conflict', size: 5, reason: 'old_size_mismatch' });
  // Rollback: a smaller checkpoint cannot be presented as an extension of what is held.
  assert.equal(decideCheckpoint(held, 5, [], cp(3)).kind, 'bad_request');
  assert.deepEqual(decideCheckpoint(held, 3, consistencyProof(3, 3, read), cp(3)), { kind: 'conflict', size: 5, reason: 'old_size_mismatch' });
  // Same size, other root: a fork at equal size.
  assert.deepEqual(decideCheckpoint(held, 5, [], cp(5, fork.roots[5])), { kind: 'conflict', size: 5, reason: 'root_mismatch' });
  // A fork that grows: its own proof is internally valid but does not start at the held root.
  const forkCp = cp(12, fork.roots[12]);
  assert.deepEqual(decideCheckpoint(held, 5, consistencyProof(5, 12, fork.read), forkCp), { kind: 'inconsistent' });
  assert.deepEqual(decideCheckpoint(held, 5, consistencyProof(5, 12, read), forkCp), { kind: 'inconsistent' });
  assert.deepEqual(decideCheckpoint(held, 5, [], cp(12)), { kind: 'inconsistent' });

  assert.equal(decisionStatus({ kind: 'accept', advance: true }), 200);
  assert.equal(decisionStatus({ kind: 'conflict', size: 1, reason: 'root_mismatch' }), 409);
  assert.equal(decisionStatus({ kind: 'bad_request', reason: '' }), 400);
  assert.equal(decisionStatus({ kind: 'inconsistent' }), 422);
});

test('add-checkpoint request body round-trips and hostile bodies are 400', async () => {
  const { read, roots } = log(9);
  const s = new TestSigner();
  const origin = 'gavel.example/log';
  const pub = await s.publicKey('log');
  const note = await signCheckpoint({ origin, size: 9, root: roots[9] as Uint8Array }, ed25519NoteSigner(origin, pub, (m) => s.sign('log', m)));
  const proof = consistencyProof(4, 9, read);
  const body = formatAddCheckpointRequest(4, proof, note);
  assert.ok(body.startsWith('old 4\n'));
  const parsed = parseAddCheckpointRequest(body);
  assert.equal(parsed.oldSize, 4);
  assert.deepEqual(parsed.proof, proof);
  assert.equal(parsed.note, note);

  const logs = new Map([[origin, [parseVkey(formatVkey(origin, SIG_TYPE_ED25519, pub))]]]);
  const ok = checkAddCheckpoint(body, logs);
  assert.equal(ok.kind, 'ok');
  assert.equal(ok.kind === 'ok' && ok.checkpoint.size, 9);
  const status = (b: string, l = logs) => {
    const c = checkAddCheckpoint(b, l);
    return c.kind === 'ok' ? 200 : c.status;
  };
  assert.equal(status(body, new Map()), 404);
  const otherPub = await s.publicKey('other');
  assert.equal(status(body, new Map([[origin, [parseVkey(formatVkey(origin, SIG_TYPE_ED25519, otherPub))]]])), 403);
  assert.equal(status(body.replace('\n9\n', '\n10\n')), 403);
  for (const bad of ['', 'old 01\n\n' + note, 'old -1\n\n' + note, 'old 4\n' + note, 'old 4\nAAAA\n\n' + note, 'old 4\n\n', 'old 4\n\nnot a note', `old 4\n${'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n'.repeat(64)}\n${note}`]) {
    assert.equal(status(bad), 400, JSON.stringify(bad.slice(0, 40)));
  }
});
