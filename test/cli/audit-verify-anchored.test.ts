// `gavel audit verify` checks every member a reader of the proof file relies on: anchored_height
// (spec 2.10) names the size of the anchored checkpoint, so a file whose anchored_height
// disagrees with the checkpoint it carries must not read VERIFIED.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync, sign } from 'node:crypto';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runAuditVerify } from '../../src/cli/audit-verify.ts';
import { signCheckpoint, formatCheckpoint } from '../../src/domain/auditlog/checkpoint.ts';
import { cosignCheckpoint } from '../../src/domain/auditlog/cosignature.ts';
import { leafHashOfEvent } from '../../src/domain/auditlog/leaf.ts';
import { ed25519NoteSigner, formatVkey, SIG_TYPE_COSIGNATURE_V1, SIG_TYPE_ED25519 } from '../../src/domain/auditlog/note.ts';
import { toBase64 } from '../../src/domain/auditlog/bytes.ts';

const sink = () => { let text = ''; return { write: (s: string) => { text += s; }, get text() { return text; } }; };
const keyPair = () => {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const pub = new Uint8Array(publicKey.export({ format: 'der', type: 'spki' }).subarray(12));
  return { pub, sign: async (m: Uint8Array) => new Uint8Array(sign(null, m, privateKey)) };
};

test('a proof file whose anchored_height is not its checkpoint size is NOT VERIFIED', async () => {
  const origin = 'example.test/log', witnessName = 'example.test/witness';
  const log = keyPair(), witness = keyPair();
  const event = { id: 'aud_01m8bs7g6nje9tt3cpgscfje6h', project_id: 'prj_01m8bs77wgkg5d68sr08xw9m20', kind: 'decision', actor: 'system', created_at: '2026-01-01T00:00:00.000Z', data: { n: 1 } };
  const root = leafHashOfEvent(event); // a tree of one leaf: its root is the leaf, its path empty
  const cp = { origin, size: 1, root };
  const signed = await signCheckpoint(cp, ed25519NoteSigner(origin, log.pub, log.sign));
  const cosig = await cosignCheckpoint(formatCheckpoint(cp), { name: witnessName, publicKey: witness.pub, sign: witness.sign }, 1_790_000_000);
  const proof = { audit_event_id: event.id, leaf_version: 'gavel-audit-v1', leaf_index: 0, tree_size: 1, root: toBase64(root), path: [], anchored_height: 1, witnessed: true, checkpoint: signed + cosig, cosignatures: [cosig], event };
  const keys = ['--log-key', formatVkey(origin, SIG_TYPE_ED25519, log.pub), '--witness-key', formatVkey(witnessName, SIG_TYPE_COSIGNATURE_V1, witness.pub)];
  const dir = mkdtempSync(join(tmpdir(), 'gavel-anchored-'));
  try {
    const run = async (p: object) => { const f = join(dir, 'p.json'); writeFileSync(f, JSON.stringify(p)); const out = sink(); return { code: await runAuditVerify([f, ...keys], out, sink()), text: out.text }; };
    const ok = await run(proof);
    assert.equal(ok.code, 0, ok.text);
    const lying = await run({ ...proof, anchored_height: 5 });
    assert.equal(lying.code, 1, lying.text);
    assert.match(lying.text, /anchored_height 5/);
    const wrongType = await run({ ...proof, anchored_height: '1' });
    assert.equal(wrongType.code, 1, wrongType.text);
    // null (no witness configured) says nothing about the size, and older exports may omit it.
    assert.equal((await run({ ...proof, anchored_height: null })).code, 0);
    const { anchored_height: _omit, ...without } = proof;
    assert.equal((await run(without)).code, 0);
    // The file names another event than the one whose leaf it proves: what a person reads is not what was checked.
    const renamed = await run({ ...proof, audit_event_id: 'aud_01m8bs7g6nje9tt3cpgscfje6j' });
    assert.equal(renamed.code, 1, renamed.text);
    assert.match(renamed.text, /not the event the proof names/);
    // Every other member a reader relies on must be the checkpoint's, or the file is not VERIFIED.
    for (const [lie, why] of [[{ tree_size: 2 }, /tree_size 2/], [{ root: toBase64(new Uint8Array(32)) }, /root differs/], [{ leaf_version: 'gavel-audit-v2' }, /unknown leaf_version/]] as const) {
      const r = await run({ ...proof, ...lie });
      assert.equal(r.code, 1, r.text);
      assert.match(r.text, why);
    }
    // Without a witness key, only --allow-unwitnessed makes a log signature enough.
    const f = join(dir, 'p.json');
    writeFileSync(f, JSON.stringify(proof));
    assert.equal(await runAuditVerify([f, '--log-key', keys[1]!], sink(), sink()), 2);
    assert.equal(await runAuditVerify([f, '--log-key', keys[1]!, '--allow-unwitnessed'], sink(), sink()), 0);
  } finally { rmSync(dir, { recursive: true, force: true }); }
});
