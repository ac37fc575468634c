// The proof, consistency and verification routes at their edges: checks a mutation audit found
// unguarded (each test fails on a one-line breakage no other test noticed).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { checkpointIfDue } from '../../src/services/auditlog/checkpointer.ts';
import { auditLogDeps } from '../../src/services/auditlog/deps.ts';
import { verifyProof } from '../../src/services/auditlog/verify.ts';
import { leafHashOfStoredEvent } from '../../src/domain/auditlog/leaf.ts';
import { LocalSigner } from '../../src/signer/local.ts';
import { backends } from '../support/backends.ts';
import { consoleMember } from '../support/console.ts';
import { sequencePending } from '../../src/services/auditlog/sequencer.ts';
import { addEvents, startAuditService } from './support.ts';
import { anotherProject } from '../support/projects.ts';

for (const backend of backends()) {
  test(`proofs, consistency and verification at their edges (${backend.name})`, async () => {
    const a = await startAuditService(backend, 'own');
    const { store } = a.svc.ts;
    const base = `/v1/projects/${a.svc.projectId}/audit`;
    try {
      const auditor = await consoleMember(a.svc, ['AUDITOR']);
      const key = await a.svc.keyHeader([]);
      const ids = await addEvents(store, a.svc.projectId, 6);
      const size = (await a.svc.auditLog.tick({ force: true })).checkpoint!;
      const get = (url: string) => a.svc.app.inject({ method: 'GET', url, headers: key });
      const verify = (id: string) => a.svc.app.inject({ method: 'POST', url: `/v1/console/projects/${a.svc.projectId}/proofs/verify`, headers: auditor.post, payload: { audit_event_id: id } });

      const proof = (await get(`${base}/${ids[0]}/proof`)).json();
      assert.equal(proof.cosignatures.length, 1, 'the witness\'s cosignature line is listed');
      assert.ok(proof.checkpoint.endsWith(proof.cosignatures[0]));

      // The first event past the witnessed checkpoint: sequenced (leaf index = its size), not covered.
      const [next] = await addEvents(store, a.svc.projectId, 1);
      await sequencePending(store);
      const late = await get(`${base}/${next}/proof`);
      assert.equal(late.statusCode, 409, late.body);
      assert.equal(late.json().code, 'proof_not_ready');

      // Consistency: from above to, and to above the newest checkpoint, are the caller's errors.
      assert.equal((await get(`${base}/consistency?from=${size}&to=${size - 1}`)).statusCode, 400);
      assert.equal((await get(`${base}/consistency?from=1&to=${size + 1}`)).statusCode, 400, 'the tree is larger, but no checkpoint signed it');
      assert.equal((await get(`${base}/consistency?from=1&to=${size}`)).statusCode, 200);
      // A size that is not one says which form a size takes: "decimal" alone does not tell 17 digits, -1 or 1e3 from it.
      for (const [query, pointer] of [['from=-1&to=1', '/from'], ['from=1e3&to=1', '/from'], ['from=1&to=99999999999999999', '/to']] as const) {
        const res = await get(`${base}/consistency?${query}`);
        assert.equal(res.statusCode, 400, res.body);
        assert.deepEqual(res.json().errors.map((e: { pointer: string }) => e.pointer), [pointer]);
        assert.match(res.json().errors[0].message, /a whole number in decimal digits, no sign or leading zero, at most 16 digits/);
      }

      // A tampered row: its leaf sibling still verifies (the tree keeps the leaf hash it sequenced).
      const row = await store.db.selectFrom('audit_events').select(['id', 'leaf_index']).where('id', '=', ids[2]!).executeTakeFirstOrThrow();
      const sibling = await store.db.selectFrom('audit_events').select('id').where('leaf_index', '=', Number(row.leaf_index) ^ 1).executeTakeFirstOrThrow();
      await store.db.updateTable('audit_events').set({ data: JSON.stringify({ rewritten: true }) }).where('id', '=', row.id).execute();
      assert.equal((await verify(row.id)).json().verification, 'INVALID');
      assert.equal((await verify(sibling.id)).json().verification, 'VERIFIED');

      // A checkpoint row whose root column no longer says what its signed note says.
      await store.db.updateTable('audit_checkpoints').set({ root: Buffer.alloc(32, 1) }).where('size', '=', size).execute();
      const altered = (await verify(ids[0]!)).json();
      assert.equal(altered.verification, 'INVALID');
      assert.match(altered.reason, /does not match its signed text/);
      // Its signed note altered (another signature): not the log's checkpoint.
      const cp = await store.db.selectFrom('audit_checkpoints').select(['note']).where('size', '=', size).executeTakeFirstOrThrow();
      const [text, sig] = cp.note.split('\n\n') as [string, string];
      const forged = `${text}\n\n${sig.replace(/ (\S+)\n$/, (_m, b64: string) => ` ${Buffer.from(Buffer.from(b64, 'base64').map((x, i) => (i === 10 ? x ^ 1 : x))).toString('base64')}\n`)}`;
      assert.notEqual(forged, cp.note);
      await store.db.updateTable('audit_checkpoints').set({ note: forged }).where('size', '=', size).execute();
      const unsigned = (await verify(ids[0]!)).json();
      assert.equal(unsigned.verification, 'INVALID');
      assert.match(unsigned.reason, /not signed by the log key/);
    } finally { await a.stop(); }
  });
}

for (const backend of backends()) {
  test(`verification takes a witness's answer only for the checkpoint checked, and without a lookup or a stored cosignature says UNAVAILABLE (${backend.name})`, async () => {
    const a = await startAuditService(backend, 'own');
    const { store } = a.svc.ts;
    let roots: (url: string) => { status: number; body: string } = () => ({ status: 404, body: '404 page not found\n' });
    const front = createServer((req, res) => { const r = roots(req.url ?? ''); res.writeHead(r.status, { 'content-type': 'text/plain' }).end(r.body); });
    await new Promise<void>((resolve) => front.listen(0, '127.0.0.1', resolve));
    const deps = { ...auditLogDeps(a.svc.deps), witnessUrl: `http://127.0.0.1:${(front.address() as AddressInfo).port}` };
    const signer = new LocalSigner(join(a.svc.ts.dataDir, 'keys'));
    try {
      await addEvents(store, a.svc.projectId, 2);
      const first = (await a.svc.auditLog.tick({ force: true })).checkpoint!;
      const [later] = await addEvents(store, a.svc.projectId, 1);
      assert.equal((await a.svc.auditLog.tick({ force: true })).witness?.kind, 'cosigned');
      // A witness answering every lookup with the first checkpoint, genuinely cosigned: not this checkpoint's.
      const firstCp = await store.db.selectFrom('audit_checkpoints').select('root').where('size', '=', first).executeTakeFirstOrThrow();
      const held = await fetch(`${a.svc.deps.config.witnessUrl}/roots/${Buffer.from(firstCp.root).toString('hex')}?origin=${encodeURIComponent(a.origin)}`).then((r) => r.text());
      roots = () => ({ status: 200, body: held });
      const v = await verifyProof(deps, a.svc.projectId, later!);
      assert.equal(v.verification, 'NOT_WITNESSED', JSON.stringify(v));
      // No lookup (a plain C2SP witness) and a newest checkpoint nobody cosigned yet: the witness could not be consulted.
      roots = () => ({ status: 404, body: '404 page not found\n' });
      const [unwitnessed] = await addEvents(store, a.svc.projectId, 1);
      await sequencePending(store);
      assert.ok(await checkpointIfDue(store, signer, new Date(), { intervalMs: 60_000, maxEvents: 10_000 }, true));
      assert.equal((await verifyProof(deps, a.svc.projectId, unwitnessed!)).verification, 'UNAVAILABLE');
      // An event the witnessed checkpoint covers is checked against it, not against the newer unwitnessed one.
      assert.equal((await verifyProof(deps, a.svc.projectId, later!)).verification, 'VERIFIED');
    } finally {
      await new Promise((resolve) => front.close(resolve));
      await a.stop();
    }
  });
}

for (const backend of backends()) {
  test(`an event row rewritten to read otherwise but parse back the same is INVALID, not VERIFIED (${backend.name})`, async () => {
    const a = await startAuditService(backend, 'own');
    const { store } = a.svc.ts;
    try {
      const auditor = await consoleMember(a.svc, ['AUDITOR']);
      const ids = await addEvents(store, a.svc.projectId, 4);
      await a.svc.auditLog.tick({ force: true });
      const verify = async (id: string) => (await a.svc.app.inject({ method: 'POST', url: `/v1/console/projects/${a.svc.projectId}/proofs/verify`, headers: auditor.post, payload: { audit_event_id: id } })).json();
      const rewrite = async (id: string, edit: (text: string) => string) => {
        const { data } = await store.db.selectFrom('audit_events').select('data').where('id', '=', id).executeTakeFirstOrThrow();
        await store.db.updateTable('audit_events').set({ data: edit(data) }).where('id', '=', id).execute();
      };
      assert.equal((await verify(ids[1]!)).verification, 'VERIFIED');
      // A member named twice: JSON.parse keeps the last (the signed value), SQLite's json_extract and
      // other readers the first. The row says n is 99 to them; it was altered, whatever one parser sees.
      await rewrite(ids[1]!, (text) => text.replace('{', '{"n":99,'));
      const twice = await verify(ids[1]!);
      assert.equal(twice.verification, 'INVALID', JSON.stringify(twice));
      assert.equal(twice.evidence.local_proof, 'invalid');
      // Reformatted only: the bytes the leaf was computed from are not the bytes stored.
      await rewrite(ids[2]!, (text) => JSON.stringify(JSON.parse(text), null, 2));
      assert.equal((await verify(ids[2]!)).verification, 'INVALID');
      assert.equal((await verify(ids[3]!)).verification, 'VERIFIED', 'an untouched row still verifies');
    } finally { await a.stop(); }
  });
}

for (const backend of backends()) {
  test(`an INVALID verification says where the store was altered: the event's row, a leaf hash on its path, or a node on it (${backend.name})`, async () => {
    const a = await startAuditService(backend, 'own');
    const { store } = a.svc.ts;
    try {
      const auditor = await consoleMember(a.svc, ['AUDITOR']);
      const ids = await addEvents(store, a.svc.projectId, 8);
      const size = (await a.svc.auditLog.tick({ force: true })).checkpoint!;
      const verify = async (id: string) => (await a.svc.app.inject({ method: 'POST', url: `/v1/console/projects/${a.svc.projectId}/proofs/verify`, headers: auditor.post, payload: { audit_event_id: id } })).json();
      const events = () => store.db.selectFrom('audit_events');
      // An event whose sibling leaf and whose sibling pair (level 1) lie inside the tree.
      const rows = await events().select(['id', 'leaf_index', 'data', 'leaf_hash']).where('id', 'in', ids).execute();
      const row = rows.find((r) => ((Number(r.leaf_index) >> 1) ^ 1) * 2 + 1 < size)!;
      const index = Number(row.leaf_index);
      const sibling = await events().select(['id', 'leaf_hash']).where('leaf_index', '=', index ^ 1).executeTakeFirstOrThrow();
      const pair = (index >> 1) ^ 1;
      assert.equal((await verify(row.id)).verification, 'VERIFIED');

      // Its own row rewritten: the row, not the tree, is named.
      await store.db.updateTable('audit_events').set({ data: JSON.stringify({ rewritten: true }) }).where('id', '=', row.id).execute();
      const own = await verify(row.id);
      assert.equal(own.verification, 'INVALID');
      assert.match(own.reason, new RegExp(`audit event ${row.id} no longer hashes to the leaf hash recorded for leaf ${index}`));
      await store.db.updateTable('audit_events').set({ data: row.data }).where('id', '=', row.id).execute();

      // The leaf hash its sibling's row records altered: the event is intact, its path is not.
      await store.db.updateTable('audit_events').set({ leaf_hash: Buffer.alloc(32, 7) }).where('id', '=', sibling.id).execute();
      const leafHash = await verify(row.id);
      assert.equal(leafHash.verification, 'INVALID');
      assert.match(leafHash.reason, new RegExp(`leaf hash recorded for leaf ${index ^ 1} \\(audit event ${sibling.id}\\) does not match that event`));
      assert.doesNotMatch(leafHash.reason, new RegExp(`audit event ${row.id}`), 'the event checked is not blamed');
      await store.db.updateTable('audit_events').set({ leaf_hash: sibling.leaf_hash }).where('id', '=', sibling.id).execute();

      // A stored node on its path altered: that node is named.
      const node = await store.db.selectFrom('audit_nodes').select(['pos', 'hash']).where('level', '=', 1).where('idx', '=', pair).executeTakeFirstOrThrow();
      await store.db.updateTable('audit_nodes').set({ hash: Buffer.alloc(32, 9) }).where('level', '=', 1).where('idx', '=', pair).execute();
      const tree = await verify(row.id);
      assert.equal(tree.verification, 'INVALID');
      assert.match(tree.reason, new RegExp(`stored node 1/${pair} \\(leaves ${pair * 2}-${pair * 2 + 1}\\) does not match the two hashes below it`));
      assert.doesNotMatch(tree.reason, new RegExp(`audit event ${row.id}`), 'the event checked is not blamed');
      await store.db.updateTable('audit_nodes').set({ hash: node.hash }).where('level', '=', 1).where('idx', '=', pair).execute();

      // Its row rewritten with a leaf hash to match: the stored node above it and its sibling is named.
      const full = await events().selectAll().where('id', '=', row.id).executeTakeFirstOrThrow();
      const data = JSON.stringify({ rewritten: true });
      await store.db.updateTable('audit_events').set({ data, leaf_hash: Buffer.from(leafHashOfStoredEvent({ ...full, data })) }).where('id', '=', row.id).execute();
      for (const id of [row.id, sibling.id]) {
        const rewritten = await verify(id);
        assert.equal(rewritten.verification, 'INVALID');
        assert.match(rewritten.reason, new RegExp(`give stored node 1/${index >> 1} \\(leaves ${index & ~1}-${index | 1}\\) otherwise than it is stored`), rewritten.reason);
      }
      await store.db.updateTable('audit_events').set({ data: row.data, leaf_hash: row.leaf_hash }).where('id', '=', row.id).execute();
      assert.equal((await verify(row.id)).verification, 'VERIFIED', 'restored');
    } finally { await a.stop(); }
  });
}

for (const backend of backends()) {
  test(`an INVALID verification names no event of another project: a leaf hash altered beside it is named by its index (${backend.name})`, async () => {
    const a = await startAuditService(backend, 'own');
    const { store } = a.svc.ts;
    try {
      const auditor = await consoleMember(a.svc, ['AUDITOR']);
      const { projectId: other } = await anotherProject(store, []);
      // One log for the installation: events of the two projects side by side, each leaf's sibling of the other.
      const mine: string[] = [];
      for (let i = 0; i < 4; i++) { mine.push(...await addEvents(store, a.svc.projectId, 1)); await addEvents(store, other, 1); }
      await a.svc.auditLog.tick({ force: true });
      const row = await store.db.selectFrom('audit_events').select(['id', 'leaf_index']).where('id', '=', mine[0]!).executeTakeFirstOrThrow();
      const index = Number(row.leaf_index);
      const sibling = await store.db.selectFrom('audit_events').select(['id', 'project_id', 'leaf_hash']).where('leaf_index', '=', index ^ 1).executeTakeFirstOrThrow();
      assert.equal(sibling.project_id, other);
      await store.db.updateTable('audit_events').set({ leaf_hash: Buffer.alloc(32, 7) }).where('id', '=', sibling.id).execute();
      const res = await a.svc.app.inject({ method: 'POST', url: `/v1/console/projects/${a.svc.projectId}/proofs/verify`, headers: auditor.post, payload: { audit_event_id: row.id } });
      assert.equal(res.json().verification, 'INVALID', res.body);
      assert.match(res.json().reason, new RegExp(`leaf hash recorded for leaf ${index ^ 1} \\(an event of another project\\) does not match that event`));
      assert.ok(!res.body.includes(sibling.id), `the answer names ${sibling.id}, an event of another project: ${res.body}`);
    } finally { await a.stop(); }
  });
}
