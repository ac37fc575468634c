// The offline checkers as an auditor runs them: `gavel audit verify` and `gavel audit consistency`
// in processes of their own, whose exit status a script reads (0 checked, 1 not, 2 usage), and the
// members of a file each one must check before it says VERIFIED or CONSISTENT.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { generateKeyPairSync, sign } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runAuditVerify } from '../../src/cli/audit-verify.ts';
import { runAuditConsistency } from '../../src/cli/audit-consistency.ts';
import { formatCheckpoint, signCheckpoint } from '../../src/domain/auditlog/checkpoint.ts';
import { cosignCheckpoint } from '../../src/domain/auditlog/cosignature.ts';
import { leafHashOfEvent } from '../../src/domain/auditlog/leaf.ts';
import { appendLeaves, consistencyProof, nodeKey, type StoredNode } from '../../src/domain/auditlog/tree.ts';
import { ed25519NoteSigner, formatVkey, SIG_TYPE_COSIGNATURE_V1, SIG_TYPE_ED25519 } from '../../src/domain/auditlog/note.ts';
import { toBase64 } from '../../src/domain/auditlog/bytes.ts';
import { EMPTY_ROOT } from '../../src/domain/auditlog/hash.ts';
import { MAIN } from '../support/process.ts';

const dir = mkdtempSync(join(tmpdir(), 'gavel-checkers-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const sink = () => { let text = ''; return { write: (s: string) => { text += s; }, get text() { return text; } }; };
const keyPair = () => {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const pub = new Uint8Array(publicKey.export({ format: 'der', type: 'spki' }).subarray(12));
  return { pub, sign: async (m: Uint8Array) => new Uint8Array(sign(null, m, privateKey)) };
};

const ORIGIN = 'example.test/log';
const log = keyPair(), witnessA = keyPair(), witnessB = keyPair();
const logKey = formatVkey(ORIGIN, SIG_TYPE_ED25519, log.pub);
const keyA = formatVkey('a.example/witness', SIG_TYPE_COSIGNATURE_V1, witnessA.pub);
const keyB = formatVkey('b.example/witness', SIG_TYPE_COSIGNATURE_V1, witnessB.pub);

const events = [1, 2].map((n) => ({ id: `aud_01m8bs7g6nje9tt3cpgscfje6${n}`, project_id: 'prj_01m8bs77wgkg5d68sr08xw9m20', kind: 'decision', actor: 'system', created_at: '2026-01-01T00:00:00.000Z', data: { n } }));
const nodes = new Map<string, StoredNode>();
const read = (l: number, i: number) => nodes.get(nodeKey(l, i))?.hash;
const roots: Uint8Array[] = [];
for (const [i, e] of events.entries()) {
  const r = appendLeaves(i, [leafHashOfEvent(e)], read);
  for (const x of r.nodes) nodes.set(nodeKey(x.level, x.index), x);
  roots[r.size] = r.root;
}

/** The checkpoint of `size` for `origin`, signed by the log's key (named ORIGIN), cosigned by witness A. */
async function checkpoint(size: number, origin = ORIGIN): Promise<string> {
  const cp = { origin, size, root: roots[size]! };
  const signed = await signCheckpoint(cp, ed25519NoteSigner(ORIGIN, log.pub, log.sign));
  return signed + await cosignCheckpoint(formatCheckpoint(cp), { name: 'a.example/witness', publicKey: witnessA.pub, sign: witnessA.sign }, 1_790_000_000);
}

// A proof of event 0 in the tree of one leaf (its root is the leaf, its path empty), as the proof route exports it.
const proof = { audit_event_id: events[0]!.id, leaf_version: 'gavel-audit-v1', leaf_index: 0, tree_size: 1, root: toBase64(roots[1]!), path: [] as string[], anchored_height: 1, checkpoint: await checkpoint(1), event: events[0] };
const consistency = { from: 1, to: 2, from_root: toBase64(roots[1]!), to_root: toBase64(roots[2]!), proof: consistencyProof(1, 2, read).map(toBase64), from_checkpoint: await checkpoint(1), to_checkpoint: await checkpoint(2) };

let n = 0;
const file = (content: unknown): string => {
  const f = join(dir, `f${n++}.json`);
  writeFileSync(f, typeof content === 'string' ? content : JSON.stringify(content));
  return f;
};
const verify = async (p: unknown, keys = ['--log-key', logKey, '--witness-key', keyA]) => { const out = sink(); return { code: await runAuditVerify([file(p), ...keys], out, sink()), text: out.text }; };
const consistent = async (c: unknown, keys = ['--log-key', logKey, '--witness-key', keyA]) => { const out = sink(); return { code: await runAuditConsistency([file(c), ...keys], out, sink()), text: out.text }; };
const gavel = (args: string[]) => spawnSync(process.execPath, [MAIN, 'audit', ...args], { encoding: 'utf8', timeout: 30_000 });

test('gavel audit verify and consistency exit 0 when the check holds, 1 when it does not, 2 on a wrong command line', () => {
  const keys = ['--log-key', logKey, '--witness-key', keyA];
  for (const [sub, good, bad] of [['verify', proof, { ...proof, tree_size: 2 }], ['consistency', consistency, { ...consistency, to: 3 }]] as const) {
    const ok = gavel([sub, file(good), ...keys]);
    assert.equal(ok.status, 0, `${sub}: ${ok.stdout}${ok.stderr}`);
    const no = gavel([sub, file(bad), ...keys]);
    assert.equal(no.status, 1, `${sub}: ${no.stdout}${no.stderr}`);
    assert.match(no.stdout, /^NOT (VERIFIED|CONSISTENT): /);
    // A misspelt flag is a wrong command line, never ignored (here it would have dropped the witness).
    const typo = gavel([sub, file(good), '--log-key', logKey, '--witnes-key', keyA, ...(sub === 'verify' ? ['--allow-unwitnessed'] : [])]);
    assert.equal(typo.status, 2, `${sub}: ${typo.stdout}${typo.stderr}`);
    assert.match(typo.stderr, /Unknown option '--witnes-key'/);
  }
});

test('verify: every witness key given must have cosigned, an export without leaf_version still verifies, a bad event is NOT VERIFIED', async () => {
  assert.equal((await verify(proof)).code, 0);
  const both = await verify(proof, ['--log-key', logKey, '--witness-key', keyA, '--witness-key', keyB]);
  assert.equal(both.code, 1, both.text);
  assert.match(both.text, /^NOT VERIFIED: no valid cosignature by witness b\.example\/witness/);
  // A cosignature line of witness A that does not verify (one it made of another checkpoint) rejects
  // the checkpoint, though A's valid line is there too: a known key's failing signature rejects a note.
  const foreign = (await checkpoint(2)).split('\n').find((l) => l.startsWith('\u2014 a.example/witness '))!;
  for (const forged of [`${proof.checkpoint}${foreign}\n`, proof.checkpoint.replace(/\n\n/, `\n\n${foreign}\n`)]) {
    const rejected = await verify({ ...proof, checkpoint: forged });
    assert.equal(rejected.code, 1, rejected.text);
    assert.match(rejected.text, /^NOT VERIFIED: a cosignature by witness a\.example\/witness does not verify/);
    const older = await consistent({ ...consistency, from_checkpoint: forged });
    assert.equal(older.code, 1, older.text);
    assert.match(older.text, /a cosignature by witness a\.example\/witness does not verify/);
  }
  const { leaf_version: _omitted, ...older } = proof;
  assert.equal((await verify(older)).code, 0, 'leaf_version is optional: exports before it was added');
  for (const [p, why] of [
    [{ ...proof, event: null }, /event \(the audit event record\) is missing/],
    [{ ...proof, event: { ...events[0], kind: 5 } }, /the event cannot be encoded: kind must be a string/],
    [{ ...proof, root: 'not base64!' }, /root is not base64/],
  ] as const) {
    const r = await verify(p);
    assert.equal(r.code, 1, r.text);
    assert.match(r.text, why);
  }
});

test('consistency: checkpoints of two logs, a stated root that is not a root, and a proof that is not base64 are NOT CONSISTENT', async () => {
  assert.equal((await consistent(consistency)).code, 0);
  // One key signs for two origins (two logs): each checkpoint verifies, and the proof joins their roots.
  const twoLogs = await consistent({ ...consistency, to_checkpoint: await checkpoint(2, 'example.test/other') });
  assert.equal(twoLogs.code, 1, twoLogs.text);
  assert.match(twoLogs.text, /^NOT CONSISTENT: the checkpoints are of two logs/);
  for (const [c, why] of [
    [{ ...consistency, from_root: 5 }, /from_root differs from the root its signed checkpoint states/],
    [{ ...consistency, to_root: null }, /to_root differs/],
    [{ ...consistency, proof: ['not base64!'] }, /the proof holds a value that is not base64/],
    [{ ...consistency, from_checkpoint: 5 }, /from_checkpoint and to_checkpoint must be signed checkpoint notes/],
  ] as const) {
    const r = await consistent(c);
    assert.equal(r.code, 1, r.text);
    assert.match(r.text, why);
  }
});

test('consistency: a file asked for sizes that are not checkpoints (null checkpoints, as the route answers them) is a usage error, exit 2, naming them; from=0 is not one', async () => {
  const asked = async (c: unknown) => { const [out, err] = [sink(), sink()]; return { code: await runAuditConsistency([file(c), '--log-key', logKey, '--witness-key', keyA], out, err), out: out.text, err: err.text }; };
  const where = 'Ask for two sizes that are checkpoints: the tree_size of a proof, or the size of a checkpoint kept from GET …/audit/log (the second line of its checkpoint or witnessed_checkpoint); from=0, the empty tree, needs none (docs/audit-log.md)\n';
  for (const [c, named] of [
    [{ ...consistency, from_checkpoint: null }, 'size 1 is not a checkpoint size (the file holds no signed checkpoint for it)'],
    [{ ...consistency, to: 3, to_checkpoint: null }, 'size 3 is not a checkpoint size (the file holds no signed checkpoint for it)'],
    [{ ...consistency, to: 3, from_checkpoint: null, to_checkpoint: null }, 'sizes 1 and 3 are not checkpoint sizes (the file holds no signed checkpoint for them)'],
    // to=0: the empty tree is no checkpoint either; from=0 alone needs none.
    [{ from: 0, to: 0, proof: [], from_root: toBase64(EMPTY_ROOT), to_root: toBase64(EMPTY_ROOT), from_checkpoint: null, to_checkpoint: null }, 'size 0 is not a checkpoint size (the file holds no signed checkpoint for it)'],
  ] as const) {
    const r = await asked(c);
    assert.deepEqual(r, { code: 2, out: '', err: `gavel audit consistency: ${named}, so nothing was checked and nothing is known of the log. ${where}` });
  }
  const fromEmpty = await asked({ from: 0, to: 2, from_root: toBase64(EMPTY_ROOT), to_root: toBase64(roots[2]!), proof: [], from_checkpoint: null, to_checkpoint: await checkpoint(2) });
  assert.equal(fromEmpty.code, 0, fromEmpty.out + fromEmpty.err);
  // Through the command, as a user runs it.
  const run = gavel(['consistency', file({ ...consistency, from_checkpoint: null }), '--log-key', logKey]);
  assert.equal(run.status, 2, run.stdout + run.stderr);
  assert.match(run.stderr, /^gavel audit consistency: size 1 is not a checkpoint size/);
});

test('a checkpoint checked with the wrong log key says which keys signed it and which was given (names and key IDs, public)', async () => {
  const other = keyPair();
  const idOf = (vkey: string) => vkey.split('+')[1]!;
  for (const wrong of [formatVkey(ORIGIN, SIG_TYPE_ED25519, other.pub), formatVkey('example.test/another-log', SIG_TYPE_ED25519, other.pub)]) {
    const r = await consistent(consistency, ['--log-key', wrong]);
    assert.equal(r.code, 1, r.text);
    assert.match(r.text, /no signature from a known key/);
    // The log's line and witness A's cosignature (type 0x04) are both named; the key given too.
    assert.ok(r.text.includes(`${ORIGIN} (key ID ${idOf(logKey)})`), r.text);
    assert.ok(r.text.includes(`a.example/witness (key ID ${idOf(keyA)})`), r.text);
    assert.ok(r.text.includes(`the key given: ${wrong.split('+')[0]} (key ID ${idOf(wrong)})`), r.text);
    const v = await verify(proof, ['--log-key', wrong, '--witness-key', keyA]);
    assert.ok(v.text.includes(`${ORIGIN} (key ID ${idOf(logKey)})`), v.text);
  }
});

test('the server\'s error answer saved in place of a proof or consistency file is exit 2 naming it, never NOT VERIFIED; an array is a damaged file', async () => {
  const notReady = { type: 'https://gavel.dev/problems/proof_not_ready', title: 'Conflict', status: 409, code: 'proof_not_ready', detail: 'the event is not sequenced into the log yet; retry after 120 s', request_id: 'req_01m8g8mhjwqtek7zm0c0wasned', retry_after_seconds: 120 };
  const tooFar = { type: 'https://gavel.dev/problems/invalid_request', title: 'Bad Request', status: 400, code: 'invalid_request', detail: 'to exceeds the newest checkpoint size 7', request_id: 'req_01m8g8mhk4pzg0sfm98xd66tcf' };
  for (const [run, answer] of [[runAuditVerify, notReady], [runAuditConsistency, tooFar]] as const) {
    const out = sink();
    const err = sink();
    const code = await run([file(answer), '--log-key', logKey, '--witness-key', keyA], out, err);
    assert.equal(code, 2, out.text + err.text);
    assert.equal(out.text, '', 'no verdict on the log');
    assert.match(err.text, new RegExp(`holds the server's error answer \\(${answer.status} ${answer.code}: ${answer.detail}\\)`));
  }
  assert.deepEqual(await verify([proof]), { code: 1, text: 'NOT VERIFIED: the proof file must hold a JSON object\n' });
  assert.deepEqual(await consistent([consistency]), { code: 1, text: 'NOT CONSISTENT: the consistency file must hold a JSON object\n' });
});

test('consistency from size 0 (the empty tree, which no checkpoint signs and RFC 9162 gives no proof from) is CONSISTENT once the newer checkpoint checks, and says why', async () => {
  // As the route answers from=0: an empty proof, the empty tree's root, no older checkpoint.
  const fromEmpty = { from: 0, to: 2, from_root: toBase64(EMPTY_ROOT), to_root: toBase64(roots[2]!), proof: [] as string[], from_checkpoint: null, to_checkpoint: await checkpoint(2) };
  const r = await consistent(fromEmpty);
  assert.equal(r.code, 0, r.text);
  assert.equal(r.text, `CONSISTENT: ${ORIGIN} at size 2 extends the empty tree (size 0), as every tree does: RFC 9162 defines no consistency proof from size 0, so only the newer checkpoint was checked, its checkpoint cosigned by a.example/witness\n`);
  // The newer checkpoint is still checked, and nothing is taken for the empty tree that is not it.
  for (const [c, why] of [
    [{ ...fromEmpty, to_checkpoint: await checkpoint(1) }, /the newer checkpoint is of size 1, not 2/],
    [{ ...fromEmpty, from_root: toBase64(roots[1]!) }, /from_root differs from the root the empty tree has/],
    [{ ...fromEmpty, proof: [toBase64(roots[1]!)] }, /a proof from size 0 \(the empty tree\) must be empty/],
  ] as const) {
    const bad = await consistent(c);
    assert.equal(bad.code, 1, bad.text);
    assert.match(bad.text, why);
  }
  const unwitnessed = await consistent(fromEmpty, ['--log-key', logKey, '--witness-key', keyB]);
  assert.equal(unwitnessed.code, 1, unwitnessed.text);
  assert.match(unwitnessed.text, /no valid cosignature by witness b\.example\/witness on the newer checkpoint/);
});
