// Conformance of the audit log's wire formats to the standards they claim, checked by an auditor's
// verifier that shares no code with src/ (./independent-verifier.ts, node:crypto only): a real
// service makes decisions, signs checkpoints and has them cosigned by a real witness; then every
// checkpoint, inclusion proof and consistency proof it serves is checked against RFC 9162 and the
// C2SP signed-note, tlog-checkpoint, tlog-cosignature and tlog-witness texts. Proofs must not only
// verify: they must be exactly the RFC's PATH and PROOF over the leaves, recomputed here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync, sign } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { logIdentity } from '../../src/services/auditlog/log.ts';
import { LocalSigner } from '../../src/signer/local.ts';
import { startWitness, type RunningWitness } from '../../src/witness/server.ts';
import { activatePolicy, ALLOW_PAYMENTS, decide, issue, newAgent } from '../support/authorize.ts';
import { backends } from '../support/backends.ts';
import { startService } from '../support/service.ts';
import * as v from './independent-verifier.ts';
import { startAuditService } from './support.ts';

const b64 = (b: Uint8Array) => Buffer.from(b).toString('base64');

test('the independent verifier agrees with itself: RFC 9162 PATH and PROOF verify, and fail when altered, for every size up to 70', () => {
  const leaves = Array.from({ length: 70 }, (_, i) => v.leafHash(Buffer.from(`leaf ${i}`)));
  assert.equal(v.mth([]).toString('hex'), 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  for (let n = 1; n <= leaves.length; n++) {
    const tree = leaves.slice(0, n);
    const root = v.mth(tree);
    for (let m = 0; m < n; m++) {
      const p = v.path(m, tree);
      v.verifyInclusion(m, n, tree[m]!, p, root);
      if (p.length > 0) assert.throws(() => v.verifyInclusion(m, n, tree[m]!, [...p.slice(0, -1), Buffer.alloc(32)], root), v.VerifierError);
      assert.throws(() => v.verifyInclusion(n, n, tree[m]!, p, root), v.VerifierError);
      if (p.length > 0) assert.throws(() => v.verifyInclusion(m, n, tree[m]!, p.slice(1), root), v.VerifierError);
    }
    for (let m = 1; m <= n; m++) {
      const p = m === n ? [] : v.consistencyProof(m, tree);
      v.verifyConsistency(m, n, v.mth(tree.slice(0, m)), root, p);
      if (p.length > 0) assert.throws(() => v.verifyConsistency(m, n, v.mth(tree.slice(0, m)), root, p.slice(1)), v.VerifierError);
    }
  }
});

for (const backend of backends()) {
  test(`checkpoints, cosignatures, inclusion and consistency proofs conform to RFC 9162 and C2SP (${backend.name})`, async () => {
    const a = await startAuditService(backend, 'own');
    const svc = a.svc;
    const { store } = svc.ts;
    const base = `/v1/projects/${svc.projectId}/audit`;
    try {
      const key = await svc.keyHeader([]);
      const get = async (url: string) => {
        const res = await svc.app.inject({ method: 'GET', url, headers: key });
        assert.equal(res.statusCode, 200, `${url}: ${res.body}`);
        return res.json();
      };

      // Decisions, with a checkpoint signed and witnessed after some of them, so that many sizes are checkpoints.
      await activatePolicy(svc, ALLOW_PAYMENTS);
      const agent = newAgent();
      const { jws } = await issue(svc, agent.did, { actions: ['read'], resources: ['resource://docs/*'] });
      const auditIds: string[] = [];
      const checkpointSizes: number[] = [];
      for (let i = 0; i < 40; i++) {
        auditIds.push((await decide(svc, key, { agent: agent.did, permit: jws, action: 'read', resource: `resource://docs/${i % 3 === 0 ? 'secret/' : ''}${i}` })).audit_id);
        if (i % 7 === 3 || i === 39) {
          const t = await svc.auditLog.tick({ force: true });
          assert.equal(t.witness?.kind, 'cosigned', JSON.stringify(t.witness));
          checkpointSizes.push(t.checkpoint!);
        }
      }

      // The published keys: vkeys of the right types, whose key hashes are the signed-note key IDs.
      const info = await get(`${base}/log`);
      const logKey = v.parseVkey(info.log_vkey);
      assert.equal(logKey.type, v.SIG_ED25519, 'the log signs with Ed25519 (signature type 0x01)');
      assert.equal(logKey.name, info.origin, 'the log\'s key name matches its origin (tlog-checkpoint SHOULD)');
      const witnessKey = v.parseVkey(info.witness_vkey);
      assert.equal(witnessKey.type, v.SIG_COSIGNATURE_V1, 'the witness cosigns with cosignature/v1 (type 0x04)');
      const announced = await (await fetch(`${a.witness!.url}/`)).json() as { vkey: string; name: string };
      assert.equal(announced.vkey, info.witness_vkey);
      assert.equal(v.parseVkey(announced.vkey).name, announced.name);

      // The log route's newest checkpoint is the newest witnessed one here: signed, cosigned.
      assert.equal(info.checkpoint, info.witnessed_checkpoint);
      assert.equal(v.parseCheckpoint(v.openNote(info.checkpoint, logKey).text).size, Math.max(...checkpointSizes));
      assert.equal(v.verifyCosignatures(info.checkpoint, witnessKey).length, 1);

      // Every leaf of the tree, as stored; recomputed from its event where the project can read it (below).
      const size = Math.max(...checkpointSizes);
      const rows = await store.db.selectFrom('audit_events').select(['id', 'project_id', 'kind', 'actor', 'created_at', 'data', 'leaf_index', 'leaf_hash'])
        .where('leaf_index', 'is not', null).where('leaf_index', '<', size).orderBy('leaf_index').execute();
      assert.deepEqual(rows.map((r) => Number(r.leaf_index)), Array.from({ length: size }, (_, i) => i), 'leaf indexes are gapless');
      const leaves = rows.map((r) => Buffer.from(r.leaf_hash!));
      // Every leaf, of every kind of event (bootstrap, keys, policy, permits, decisions), is the
      // hash of the JCS text of its record with leaf_version (decision 0600).
      for (const r of rows) {
        const record = { id: r.id, project_id: r.project_id, kind: r.kind, actor: r.actor, created_at: r.created_at, data: JSON.parse(r.data), leaf_version: 'gavel-audit-v1' };
        assert.equal(b64(v.leafHash(Buffer.from(v.canonicalJson(record), 'utf8'))), b64(r.leaf_hash!), `leaf ${r.leaf_index} (${r.kind}) recomputes from its row`);
      }
      assert.ok(new Set(rows.map((r) => r.kind)).size >= 4, `kinds: ${[...new Set(rows.map((r) => r.kind))].join(', ')}`);
      const rootAt = (n: number) => v.mth(leaves.slice(0, n));

      // Every checkpoint: a signed note opened with the log's key, a tlog-checkpoint body of exactly
      // three lines whose root is MTH of the leaves, and a cosignature/v1 from the witness.
      for (const n of checkpointSizes) {
        const { to_checkpoint: note } = await get(`${base}/consistency?from=${n}&to=${n}`);
        const opened = v.openNote(note, logKey);
        const cp = v.parseCheckpoint(opened.text);
        assert.equal(cp.origin, info.origin);
        assert.equal(cp.size, n);
        assert.deepEqual(cp.extensions, []);
        assert.equal(b64(cp.root), b64(rootAt(n)), `the root of checkpoint ${n} is MTH(D[${n}])`);
        assert.equal(opened.text, `${info.origin}\n${n}\n${b64(rootAt(n))}\n`);
        assert.equal(opened.signatures[0]!.name, logKey.name, 'the log\'s signature comes first');
        const cosigned = v.verifyCosignatures(note, witnessKey);
        assert.equal(cosigned.length, 1, 'one cosignature from the witness');
        assert.ok(cosigned[0]!.timestamp > 0n && cosigned[0]!.timestamp <= BigInt(Math.ceil(Date.now() / 1000)));
      }

      // Inclusion: every decision's proof is RFC 9162's PATH over the leaves, verifies from the
      // leaf recomputed from the event (JCS with leaf_version, decision 0600), and leads to the
      // root of a checkpoint signed by the log and cosigned by the witness.
      for (const id of auditIds) {
        const proof = await get(`${base}/${id}/proof`);
        const leafBytes = Buffer.from(v.canonicalJson({ ...proof.event, leaf_version: proof.leaf_version }), 'utf8');
        const leaf = v.leafHash(leafBytes);
        assert.equal(b64(leaf), b64(leaves[proof.leaf_index]!), `leaf ${proof.leaf_index} recomputes from its event`);
        const opened = v.openNote(proof.checkpoint, logKey);
        const cp = v.parseCheckpoint(opened.text);
        assert.equal(cp.size, proof.tree_size);
        assert.equal(proof.anchored_height, proof.tree_size);
        assert.equal(proof.root, b64(cp.root));
        const hashes = (proof.path as string[]).map(v.base64);
        assert.deepEqual(hashes.map(b64), v.path(proof.leaf_index, leaves.slice(0, proof.tree_size)).map(b64), `the path of leaf ${proof.leaf_index} is PATH(m, D[${proof.tree_size}])`);
        v.verifyInclusion(proof.leaf_index, proof.tree_size, leaf, hashes, cp.root);
        assert.equal(v.verifyCosignatures(proof.checkpoint, witnessKey).length, 1);
        assert.equal(proof.log_vkey, info.log_vkey);
        assert.deepEqual(proof.cosignatures.map((l: string) => l), v.parseNote(proof.checkpoint).signatures.slice(1).map((s) => s.line));
      }

      // Consistency: size 1, equal sizes, powers of two, off by one either side, between checkpoints.
      const pairs: [number, number][] = [[1, size], [1, 1], [1, 2], [size, size], [7, 7]];
      for (let k = 1; 2 * k <= size; k *= 2) pairs.push([k, 2 * k], [k - 1 || 1, k], [k, k + 1], [k + 1, size]);
      for (let i = 1; i < checkpointSizes.length; i++) pairs.push([checkpointSizes[i - 1]!, checkpointSizes[i]!], [checkpointSizes[i - 1]! - 1, checkpointSizes[i]!]);
      for (const [m, n] of pairs) {
        const c = await get(`${base}/consistency?from=${m}&to=${n}`);
        assert.equal(c.from_root, b64(rootAt(m)), `from_root at ${m}`);
        assert.equal(c.to_root, b64(rootAt(n)), `to_root at ${n}`);
        const proofHashes = (c.proof as string[]).map(v.base64);
        const expected = m === n ? [] : v.consistencyProof(m, leaves.slice(0, n));
        assert.deepEqual(proofHashes.map(b64), expected.map(b64), `the proof from ${m} to ${n} is PROOF(m, D[n])`);
        v.verifyConsistency(m, n, rootAt(m), rootAt(n), proofHashes);
      }
      // From the empty tree: an empty proof.
      const fromEmpty = await get(`${base}/consistency?from=0&to=${size}`);
      assert.deepEqual(fromEmpty.proof, []);
      assert.equal(fromEmpty.from_root, b64(v.mth([])));
    } finally { await a.stop(); }
  });
}

for (const backend of backends()) {
  test(`the witness answers add-checkpoint as C2SP tlog-witness says (${backend.name})`, async () => {
    const a = await startAuditService(backend, 'own');
    const svc = a.svc;
    const base = `/v1/projects/${svc.projectId}/audit`;
    try {
      const key = await svc.keyHeader([]);
      const info = (await svc.app.inject({ method: 'GET', url: `${base}/log`, headers: key })).json();
      const witnessKey = v.parseVkey(info.witness_vkey);
      await activatePolicy(svc, ALLOW_PAYMENTS);
      const t = await svc.auditLog.tick({ force: true });
      assert.equal(t.witness?.kind, 'cosigned');
      const held = t.checkpoint!;
      const note = (await svc.app.inject({ method: 'GET', url: `${base}/consistency?from=${held}&to=${held}`, headers: key })).json().to_checkpoint as string;
      // The note as the log signed it (its own signature line only).
      const parsed = v.parseNote(note);
      const signed = `${parsed.text}\n${parsed.signatures.filter((s) => s.name === info.origin).map((s) => s.line).join('')}`;
      const add = (body: string) => fetch(`${a.witness!.url}/add-checkpoint`, { method: 'POST', body });

      // Re-submitting the held checkpoint: 200, one or more signature lines, each a cosignature.
      const again = await add(`old ${held}\n\n${signed}`);
      assert.equal(again.status, 200);
      const lines = await again.text();
      assert.match(lines, /^(\u2014 \S+ \S+\n)+$/u);
      assert.equal(v.verifyCosignatures(signed + lines, witnessKey).length, 1);

      // An old size that is not the held one: 409, the held size and a newline, as text/x.tlog.size.
      const conflict = await add(`old ${held - 1}\n${'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n'}\n${signed}`);
      assert.equal(conflict.status, 409);
      assert.equal(conflict.headers.get('content-type'), 'text/x.tlog.size');
      assert.equal(await conflict.text(), `${held}\n`);

      // An old size above the checkpoint's: 400.
      assert.equal((await add(`old ${held + 1}\n\n${signed}`)).status, 400);

      // An origin the witness does not know: 404; a known origin with no signature from its key: 403.
      const { privateKey, publicKey } = generateKeyPairSync('ed25519');
      const raw = publicKey.export({ format: 'jwk' }).x!;
      const pub = Buffer.from(raw, 'base64url');
      const signAs = (name: string, text: string) => {
        const sig = Buffer.concat([v.keyId(name, v.SIG_ED25519, pub), sign(null, Buffer.from(text), privateKey)]);
        return `${text}\n\u2014 ${name} ${sig.toString('base64')}\n`;
      };
      const unknown = `other.example/log\n${held}\n${b64(Buffer.alloc(32))}\n`;
      assert.equal((await add(`old 0\n\n${signAs('other.example/log', unknown)}`)).status, 404);
      assert.equal((await add(`old ${held}\n\n${signAs(info.origin, parsed.text)}`)).status, 403);
    } finally { await a.stop(); }
  });
}

for (const backend of backends()) {
  test(`what the log sends a witness is a tlog-witness add-checkpoint body whose proof verifies by RFC 9162 (${backend.name})`, async () => {
    // A recording front between the log and a real witness: every request body and answer as sent.
    const exchanges: { body: string; status: number; answer: string }[] = [];
    let witness: RunningWitness | undefined;
    let front: Server | undefined;
    let logVkey = '';
    const dir = mkdtempSync(join(tmpdir(), 'gavel-witness-'));
    const svc = await startService(backend, { auditTickMs: 60_000, checkpointIntervalMs: 60_000 }, async (ts) => {
      const id = await logIdentity(ts.store, new LocalSigner(join(ts.dataDir, 'keys')));
      logVkey = id.vkey;
      witness = await startWitness({ dataDir: dir, logs: [{ origin: id.origin, vkeys: [id.vkey] }] });
      front = createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          const body = Buffer.concat(chunks).toString('utf8');
          void fetch(`${witness!.url}${req.url}`, { method: req.method, ...(req.method === 'POST' ? { body } : {}) }).then(async (r) => {
            const answer = await r.text();
            if (req.url === '/add-checkpoint') exchanges.push({ body, status: r.status, answer });
            res.writeHead(r.status, { 'content-type': r.headers.get('content-type') ?? 'text/plain' }).end(answer);
          });
        });
      });
      await new Promise<void>((resolve) => front!.listen(0, '127.0.0.1', resolve));
      return { witnessUrl: `http://127.0.0.1:${(front!.address() as AddressInfo).port}`, witnessVkey: witness.publicKeyVkey };
    });
    try {
      await svc.auditLog.firstTick;
      const logKey = v.parseVkey(logVkey);
      const witnessKey = v.parseVkey(witness!.publicKeyVkey);
      const key = await svc.keyHeader([]);
      await activatePolicy(svc, ALLOW_PAYMENTS);
      const agent = newAgent();
      const { jws } = await issue(svc, agent.did, { actions: ['read'], resources: ['resource://docs/*'] });
      for (let i = 0; i < 12; i++) {
        await decide(svc, key, { agent: agent.did, permit: jws, action: 'read', resource: `resource://docs/${i}` });
        if (i % 4 === 1) assert.equal((await svc.auditLog.tick({ force: true })).witness?.kind, 'cosigned');
      }
      // Roots the witness has been shown, by size: each submission's proof must lead from the last.
      const roots = new Map<number, Buffer>([[0, v.mth([])]]);
      const submissions = exchanges.filter((e) => e.status === 200);
      assert.ok(submissions.length >= 3, `${submissions.length} submissions cosigned`);
      for (const { body, answer } of submissions) {
        // old <size>\n, zero to 63 base64 hash lines, an empty line, then the checkpoint.
        const m = /^old (0|[1-9][0-9]*)\n((?:[A-Za-z0-9+/=]+\n){0,63})\n/.exec(body);
        assert.ok(m, `a tlog-witness request body: ${JSON.stringify(body.slice(0, 200))}`);
        const old = Number(m[1]);
        const proof = m[2]!.split('\n').filter(Boolean).map(v.base64);
        assert.ok(proof.every((h) => h.length === 32));
        const note = body.slice(m[0].length);
        const cp = v.parseCheckpoint(v.openNote(note, logKey).text);
        if (cp.size === 0) assert.equal(b64(cp.root), b64(v.mth([])), 'the empty tree\'s root is SHA-256()');
        if (old === 0) assert.deepEqual(proof, [], 'the proof is empty when the old size is 0');
        else v.verifyConsistency(old, cp.size, roots.get(old)!, cp.root, proof);
        roots.set(cp.size, cp.root);
        assert.match(answer, /^(\u2014 \S+ \S+\n)+$/u, 'the answer is note signature lines');
        assert.equal(v.verifyCosignatures(note + answer, witnessKey).length, 1);
      }
    } finally {
      await svc.stop();
      await new Promise((resolve) => (front ? front.close(resolve) : resolve(undefined)));
      await witness?.close().catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    }
  });
}

test('the witness serves a log that is not Gavel as tlog-witness says: extension lines cosigned, foreign signatures ignored, RFC 9162 proofs checked', async () => {
  // A log of our own making: its key, its leaves, its checkpoints, all built with the independent code.
  const origin = 'log.example/other';
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const pub = Buffer.from(publicKey.export({ format: 'jwk' }).x!, 'base64url');
  const id = v.keyId(origin, v.SIG_ED25519, pub);
  const vkey = `${origin}+${id.toString('hex')}+${b64(Buffer.concat([Uint8Array.of(v.SIG_ED25519), pub]))}`;
  assert.equal(v.parseVkey(vkey).name, origin);
  const leaves = Array.from({ length: 20 }, (_, i) => v.leafHash(Buffer.from(`entry ${i}`)));
  const forked = [...leaves.slice(0, 8), ...Array.from({ length: 12 }, (_, i) => v.leafHash(Buffer.from(`other ${i}`)))];
  // A foreign signature the size of an ML-DSA-44 one (4 + 2420 bytes) from a key the witness does not know.
  const foreign = `\u2014 mirror.example/m ${b64(Buffer.alloc(4 + 2420, 7))}\n`;
  const checkpoint = (tree: Buffer[], n: number, extensions: string[] = []) => {
    const text = [origin, String(n), b64(v.mth(tree.slice(0, n))), ...extensions].join('\n') + '\n';
    const sig = Buffer.concat([id, sign(null, Buffer.from(text), privateKey)]);
    return { text, note: `${text}\n${foreign.repeat(14)}\u2014 ${origin} ${sig.toString('base64')}\n${foreign}` };
  };
  const dir = mkdtempSync(join(tmpdir(), 'gavel-witness-'));
  const w = await startWitness({ dataDir: dir, logs: [{ origin, vkeys: [vkey] }] });
  const witnessKey = v.parseVkey(w.publicKeyVkey);
  const add = async (old: number, proof: Buffer[], note: string) => {
    const r = await fetch(`${w.url}/add-checkpoint`, { method: 'POST', body: `old ${old}\n${proof.map((h) => `${b64(h)}\n`).join('')}\n${note}` });
    return { status: r.status, type: r.headers.get('content-type'), body: await r.text() };
  };
  try {
    // 16 signature lines, one the log's, and an extension line: cosigned, the extension line in the signed message.
    const c5 = checkpoint(leaves, 5, ['ext: opaque']);
    const first = await add(0, [], c5.note);
    assert.equal(first.status, 200, first.body);
    assert.equal(v.verifyCosignatures(c5.note + first.body, witnessKey).length, 1);
    // Growth with PROOF(5, D[13]): cosigned.
    const c13 = checkpoint(leaves, 13);
    assert.equal((await add(5, v.consistencyProof(5, leaves.slice(0, 13)), c13.note)).status, 200);
    // Growth from a power of two's neighbour to a power of two, then to the full tree.
    const c16 = checkpoint(leaves, 16);
    assert.equal((await add(13, v.consistencyProof(13, leaves.slice(0, 16)), c16.note)).status, 200);
    // A fork: the proof from the held size cannot lead to another history's root.
    const f20 = checkpoint(forked, 20);
    assert.equal((await add(16, v.consistencyProof(16, forked.slice(0, 20)), f20.note)).status, 422);
    // The held size with another root: 409 and the held size.
    const f16 = checkpoint(forked, 16);
    const same = await add(16, [], f16.note);
    assert.deepEqual([same.status, same.type, same.body], [409, 'text/x.tlog.size', '16\n']);
    // A stale old size: 409 and the held size.
    const c20 = checkpoint(leaves, 20);
    const stale = await add(13, v.consistencyProof(13, leaves.slice(0, 20)), c20.note);
    assert.deepEqual([stale.status, stale.body], [409, '16\n']);
    // A rollback (old above the checkpoint's size): 400.
    assert.equal((await add(16, [], checkpoint(leaves, 13).note)).status, 400);
    // And the true growth still goes through.
    const last = await add(16, v.consistencyProof(16, leaves.slice(0, 20)), c20.note);
    assert.equal(last.status, 200);
    assert.equal(v.verifyCosignatures(c20.note + last.body, witnessKey).length, 1);
  } finally {
    await w.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
