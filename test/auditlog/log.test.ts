// The audit log end to end on each backend: sequencing, checkpoints, witness cosignatures,
// proofs through the routes, server-side verification (VERIFIED / INVALID / UNAVAILABLE /
// NOT_WITNESSED), the offline verifier, and consistency between checkpoints.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fromBase64 } from '../../src/domain/auditlog/bytes.ts';
import { openCheckpoint } from '../../src/domain/auditlog/checkpoint.ts';
import { verifyCosignatures } from '../../src/domain/auditlog/cosignature.ts';
import { leafHashOfEvent } from '../../src/domain/auditlog/leaf.ts';
import { formatVkey, parseVkey, SIG_TYPE_COSIGNATURE_V1 } from '../../src/domain/auditlog/note.ts';
import { verifyConsistency, verifyInclusion } from '../../src/domain/auditlog/verify.ts';
import { runAuditVerify } from '../../src/cli/audit-verify.ts';
import { backends } from '../support/backends.ts';
import { consoleMember, type ConsoleMember } from '../support/console.ts';
import { addEvents, startAuditService, type AuditService } from './support.ts';

const sink = () => { let text = ''; return { write: (s: string) => { text += s; }, get text() { return text; } }; };

for (const backend of backends()) {
  describe(`audit log with a witness (${backend.name})`, () => {
    let a: AuditService;
    let auditor: ConsoleMember;
    let key: { authorization: string };
    let ids: string[];
    const dir = mkdtempSync(join(tmpdir(), 'gavel-proof-'));

    before(async () => {
      a = await startAuditService(backend, 'own');
      auditor = await consoleMember(a.svc, ['AUDITOR']);
      key = await a.svc.keyHeader(['APPROVER']);
      ids = await addEvents(a.svc.ts.store, a.svc.projectId, 7);
    });
    after(async () => { await a.stop(); rmSync(dir, { recursive: true, force: true }); });

    const proof = (id: string) => a.svc.app.inject({ method: 'GET', url: `/v1/projects/${a.svc.projectId}/audit/${id}/proof`, headers: key });
    const verify = (id: string) => a.svc.app.inject({ method: 'POST', url: `/v1/console/projects/${a.svc.projectId}/proofs/verify`, headers: auditor.post, payload: { audit_event_id: id } });

    test('an event not yet covered by a witnessed checkpoint: 409 proof_not_ready with Retry-After', async () => {
      const [late] = await addEvents(a.svc.ts.store, a.svc.projectId, 1);
      const res = await proof(late!);
      assert.equal(res.statusCode, 409);
      assert.equal(res.json().code, 'proof_not_ready');
      assert.match(String(res.headers['retry-after']), /^[1-9][0-9]*$/);
    });

    test('sequencing gives gapless leaf indexes 0..n-1 and the witness cosigns the checkpoint', async () => {
      const t = await a.svc.auditLog.tick({ force: true });
      assert.equal(t.leader, true);
      assert.deepEqual(t.witness, { kind: 'cosigned', size: t.checkpoint });
      const rows = await a.svc.ts.store.db.selectFrom('audit_events').select(['leaf_index']).orderBy('leaf_index').execute();
      assert.deepEqual(rows.map((r) => Number(r.leaf_index)), rows.map((_, i) => i));
      const nodes = await a.svc.ts.store.db.selectFrom('audit_nodes').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
      const n = rows.length;
      // Every complete subtree of two leaves or more (a single leaf's hash is its event's, decision 0603).
      assert.equal(Number(nodes.n), n - n.toString(2).split('').filter((c) => c === '1').length);
    });

    test('the proof route returns a path that verifies against the witnessed, cosigned checkpoint', async () => {
      const res = await proof(ids[3]!);
      assert.equal(res.statusCode, 200, res.body);
      const p = res.json();
      assert.equal(p.audit_event_id, ids[3]);
      assert.equal(p.leaf_version, 'gavel-audit-v1');
      assert.equal(p.witnessed, true);
      assert.equal(p.anchored_height, p.tree_size);
      const cp = openCheckpoint(p.checkpoint, [parseVkey(a.logVkey)]).checkpoint;
      assert.equal(cp.size, p.tree_size);
      assert.equal(cp.origin, a.origin);
      assert.ok(verifyInclusion(leafHashOfEvent(p.event), p.leaf_index, p.tree_size, p.path.map(fromBase64), fromBase64(p.root)));
      assert.equal(verifyCosignatures(p.checkpoint, [parseVkey(a.witness!.publicKeyVkey)]).length, 1);
      assert.equal(p.log_vkey, a.logVkey);
      writeFileSync(join(dir, 'proof.json'), res.body);
    });

    test('the offline verifier accepts the exported proof with the two public keys, and refuses altered ones', async () => {
      const file = join(dir, 'proof.json');
      const ok = sink();
      assert.equal(await runAuditVerify([file, '--log-key', a.logVkey, '--witness-key', a.witness!.publicKeyVkey], ok, sink()), 0, ok.text);
      assert.match(ok.text, /^VERIFIED: /);

      const p = JSON.parse((await import('node:fs')).readFileSync(file, 'utf8'));
      const altered = { ...p, event: { ...p.event, data: { ...p.event.data, n: 99 } } };
      writeFileSync(join(dir, 'altered.json'), JSON.stringify(altered));
      const bad = sink();
      assert.equal(await runAuditVerify([join(dir, 'altered.json'), '--log-key', a.logVkey, '--witness-key', a.witness!.publicKeyVkey], bad, sink()), 1);
      assert.match(bad.text, /^NOT VERIFIED: the event is not leaf/);

      // The genuine event, with a forged copy of it named first: some readers see the forgery.
      const genuine = (await import('node:fs')).readFileSync(file, 'utf8');
      const forged = genuine.replace('"event":', `"event":${JSON.stringify(altered.event)},"event":`);
      writeFileSync(join(dir, 'twice.json'), forged);
      const twice = sink();
      assert.equal(await runAuditVerify([join(dir, 'twice.json'), '--log-key', a.logVkey, '--witness-key', a.witness!.publicKeyVkey], twice, sink()), 1);
      assert.match(twice.text, /^NOT VERIFIED: the proof file names a member more than once \(\/event\)/);

      // A log key the checkpoint is not signed by, and a witness that did not cosign.
      const other = sink();
      const { SIG_TYPE_ED25519 } = await import('../../src/domain/auditlog/note.ts');
      const stranger = formatVkey(a.origin, SIG_TYPE_ED25519, new Uint8Array(32).fill(7));
      assert.equal(await runAuditVerify([file, '--log-key', stranger, '--witness-key', a.witness!.publicKeyVkey], other, sink()), 1);
      const noWitness = sink();
      const strangerWitness = formatVkey('other/witness', SIG_TYPE_COSIGNATURE_V1, new Uint8Array(32).fill(9));
      assert.equal(await runAuditVerify([file, '--log-key', a.logVkey, '--witness-key', strangerWitness], noWitness, sink()), 1);
      assert.match(noWitness.text, /no valid cosignature by witness other\/witness/);
      assert.equal(await runAuditVerify([file], sink(), sink()), 2);
      assert.equal(await runAuditVerify([join(dir, 'absent.json'), '--log-key', a.logVkey, '--allow-unwitnessed'], sink(), sink()), 2, 'a file it cannot read is a usage error');
      // A damaged file checks nothing: NOT VERIFIED (exit 1), not a usage error a script would skip.
      const text = JSON.stringify((await proof(ids[2]!)).json());
      const damaged: [string, string, RegExp][] = [
        ['truncated.json', text.slice(0, 500), /^NOT VERIFIED: the proof file .* is not JSON/],
        ['size-as-text.json', text.replace(/"tree_size":(\d+)/, '"tree_size":"$1"'), /^NOT VERIFIED: leaf_index and tree_size must be integers/],
        ['no-event.json', JSON.stringify({ ...JSON.parse(text), event: undefined }), /^NOT VERIFIED: event \(the audit event record\) is missing/],
      ];
      for (const [name, content, said] of damaged) {
        writeFileSync(join(dir, name), content);
        const out = sink();
        assert.equal(await runAuditVerify([join(dir, name), '--log-key', a.logVkey, '--witness-key', a.witness!.publicKeyVkey], out, sink()), 1, name);
        assert.match(out.text, said, name);
      }
    });

    test('console verification of an untouched event: VERIFIED, independently witnessed', async () => {
      const res = await verify(ids[2]!);
      assert.equal(res.statusCode, 200, res.body);
      const v = res.json();
      assert.equal(v.verification, 'VERIFIED');
      assert.equal(v.independently_witnessed, true);
      assert.equal(v.reason, null);
      assert.equal(v.evidence.local_proof, 'valid');
      assert.equal(v.evidence.chain_witness, null);
      assert.equal(v.evidence.finality, 'witnessed');
    });

    test('consistency route: the proof between two witnessed checkpoints verifies', async () => {
      const first = (await a.svc.auditLog.tick()).checkpoint;
      await addEvents(a.svc.ts.store, a.svc.projectId, 5);
      const t = await a.svc.auditLog.tick({ force: true });
      assert.equal(t.witness?.kind, 'cosigned');
      const sizes = (await a.svc.ts.store.db.selectFrom('audit_checkpoints').select('size').orderBy('size').execute()).map((r) => Number(r.size));
      assert.ok(sizes.length >= 2, `checkpoints ${sizes} (first ${first})`);
      const [from, to] = [sizes[0]!, sizes[sizes.length - 1]!];
      const res = await a.svc.app.inject({ method: 'GET', url: `/v1/projects/${a.svc.projectId}/audit/consistency?from=${from}&to=${to}`, headers: key });
      assert.equal(res.statusCode, 200, res.body);
      const c = res.json();
      const cpFrom = openCheckpoint(c.from_checkpoint, [parseVkey(a.logVkey)]).checkpoint;
      const cpTo = openCheckpoint(c.to_checkpoint, [parseVkey(a.logVkey)]).checkpoint;
      assert.ok(verifyConsistency(from, to, c.proof.map(fromBase64), cpFrom.root, cpTo.root));

      // Offline, as an auditor holding the route's answer and the two public keys would check it.
      const { runAuditConsistency } = await import('../../src/cli/audit-consistency.ts');
      const keys = ['--log-key', a.logVkey, '--witness-key', a.witness!.publicKeyVkey];
      const check = async (body: unknown, raw?: string) => {
        const file = join(dir, `consistency-${Math.random().toString(36).slice(2)}.json`);
        writeFileSync(file, raw ?? JSON.stringify(body));
        const o = sink();
        return { code: await runAuditConsistency([file, ...keys], o, sink()), text: o.text };
      };
      const ok = await check(c);
      assert.equal(ok.code, 0, ok.text);
      assert.match(ok.text, new RegExp(`^CONSISTENT: .* at size ${to} extends its tree at size ${from}, both cosigned by`));
      // Sizes swapped, the proof altered, the newer checkpoint's size misstated, a repeated member: each refused.
      assert.equal((await check({ ...c, from: to, to: from, from_checkpoint: c.to_checkpoint, to_checkpoint: c.from_checkpoint })).code, 1);
      if (c.proof.length > 0) assert.equal((await check({ ...c, proof: [c.proof[0].replace(/^./, (ch: string) => (ch === 'A' ? 'B' : 'A')), ...c.proof.slice(1)] })).code, 1);
      assert.match((await check({ ...c, to: to + 1 })).text, /^NOT CONSISTENT: the newer checkpoint is of size/);
      assert.match((await check(undefined, JSON.stringify(c).replace('"proof":', '"proof":[],"proof":'))).text, /names a member more than once \(\/proof\)/);
      // Roots stated beside the checkpoints must be the signed ones.
      assert.match((await check({ ...c, to_root: c.from_root })).text, /^NOT CONSISTENT: to_root differs from the root its signed checkpoint states/);
      assert.match((await check({ ...c, from_root: 'AAAA' })).text, /^NOT CONSISTENT: from_root differs/);
      const unwitnessed = sink();
      const strangerWitness = formatVkey('other/witness', SIG_TYPE_COSIGNATURE_V1, new Uint8Array(32).fill(9));
      const f = join(dir, 'consistency-w.json');
      writeFileSync(f, JSON.stringify(c));
      assert.equal(await runAuditConsistency([f, '--log-key', a.logVkey, '--witness-key', strangerWitness], unwitnessed, sink()), 1);
      assert.equal(await runAuditConsistency([f], sink(), sink()), 2);
      writeFileSync(join(dir, 'consistency-cut.json'), JSON.stringify(c).slice(0, 40));
      const cut = sink();
      assert.equal(await runAuditConsistency([join(dir, 'consistency-cut.json'), '--log-key', a.logVkey], cut, sink()), 1);
      assert.match(cut.text, /^NOT CONSISTENT: the consistency file .* is not JSON/);
      // A size no checkpoint signs: the route answers 200 with no checkpoint for it, and the check
      // says the question was asked wrong (exit 2), never that the log was rewritten.
      const between = Array.from({ length: to - from - 1 }, (_, i) => from + 1 + i).find((size) => !sizes.includes(size));
      assert.ok(between !== undefined, `a size between the checkpoints ${sizes} that is none`);
      const unsigned = await a.svc.app.inject({ method: 'GET', url: `/v1/projects/${a.svc.projectId}/audit/consistency?from=${between}&to=${to}`, headers: key });
      assert.equal(unsigned.statusCode, 200, unsigned.body);
      assert.equal(unsigned.json().from_checkpoint, null);
      const fu = join(dir, 'consistency-unsigned.json');
      writeFileSync(fu, unsigned.body);
      const [uo, ue] = [sink(), sink()];
      assert.equal(await runAuditConsistency([fu, ...keys], uo, ue), 2, uo.text + ue.text);
      assert.equal(uo.text, '', 'no verdict on the log');
      assert.match(ue.text, new RegExp(`^gavel audit consistency: size ${between} is not a checkpoint size .*nothing is known of the log\\. Ask for two sizes that are checkpoints: the tree_size of a proof`));
      const over = await a.svc.app.inject({ method: 'GET', url: `/v1/projects/${a.svc.projectId}/audit/consistency?from=0&to=${to + 1000}`, headers: key });
      assert.equal(over.statusCode, 400);
    });

    test('browsing: console and machine list the events newest first with leaf indexes', async () => {
      const res = await a.svc.app.inject({ method: 'GET', url: `/v1/console/projects/${a.svc.projectId}/audit?limit=3`, headers: auditor.get });
      assert.equal(res.statusCode, 200, res.body);
      const body = res.json();
      assert.equal(body.items.length, 3);
      assert.ok(body.items[0].id > body.items[1].id);
      assert.ok(body.next_cursor);
      const m = await a.svc.app.inject({ method: 'GET', url: `/v1/projects/${a.svc.projectId}/audit?cursor=${body.next_cursor}`, headers: await a.svc.keyHeader(['AUDITOR']) });
      assert.equal(m.statusCode, 200, m.body);
      assert.ok(m.json().items.every((i: { id: string }) => i.id < body.items[2].id));
    });

    test('an event of another project is 404 on both routes', async () => {
      const other = 'prj_' + '0'.repeat(26);
      await a.svc.ts.store.db.insertInto('projects').values({ id: other, name: 'other', created_at: new Date().toISOString() }).execute();
      const [foreign] = await addEvents(a.svc.ts.store, other, 1);
      await a.svc.auditLog.tick({ force: true });
      assert.equal((await proof(foreign!)).statusCode, 404);
      assert.equal((await verify(foreign!)).statusCode, 404);
    });

    test('a tampered event row verifies as INVALID (local proof invalid), never VERIFIED', async () => {
      await a.svc.ts.store.db.updateTable('audit_events').set({ data: JSON.stringify({ n: 4, note: 'rewritten' }) }).where('id', '=', ids[4]!).execute();
      const v = (await verify(ids[4]!)).json();
      assert.equal(v.verification, 'INVALID');
      assert.equal(v.independently_witnessed, false);
      assert.equal(v.evidence.local_proof, 'invalid');
      assert.match(v.reason, new RegExp(`audit event ${ids[4]} no longer hashes to the leaf hash recorded for leaf`));
      // Its neighbours are untouched.
      assert.equal((await verify(ids[5]!)).json().verification, 'VERIFIED');
    });

    test('a stopped witness gives UNAVAILABLE with a valid local proof, not INVALID', async () => {
      await a.witness!.close();
      const v = (await verify(ids[1]!)).json();
      assert.equal(v.verification, 'UNAVAILABLE');
      assert.equal(v.independently_witnessed, false);
      assert.equal(v.evidence.local_proof, 'valid');
      assert.equal(v.evidence.finality, 'local');
      assert.ok(v.reason);
      // The loop keeps going: new events are still sequenced and checkpointed, just not witnessed.
      await addEvents(a.svc.ts.store, a.svc.projectId, 2);
      const t = await a.svc.auditLog.tick({ force: true });
      assert.ok(t.sequenced >= 2);
      assert.equal(t.witness?.kind, 'unavailable');
    });
  });

  describe(`audit log whose witness never saw its roots (${backend.name})`, () => {
    let a: AuditService;
    before(async () => { a = await startAuditService(backend, 'foreign'); });
    after(async () => { await a.stop(); });

    test('a root the witness never cosigned gives NOT_WITNESSED, not INVALID', async () => {
      const [id] = await addEvents(a.svc.ts.store, a.svc.projectId, 3);
      const t = await a.svc.auditLog.tick({ force: true });
      assert.equal(t.witness?.kind, 'refused'); // the witness does not accept this origin
      const admin = await consoleMember(a.svc, ['ADMIN']);
      const res = await a.svc.app.inject({ method: 'POST', url: `/v1/console/projects/${a.svc.projectId}/proofs/verify`, headers: admin.post, payload: { audit_event_id: id } });
      assert.equal(res.statusCode, 200, res.body);
      const v = res.json();
      assert.equal(v.verification, 'NOT_WITNESSED');
      assert.equal(v.evidence.local_proof, 'valid');
      assert.equal(v.independently_witnessed, false);
      // With a witness configured, the proof route waits for a witnessed checkpoint.
      const key = await a.svc.keyHeader(['AUDITOR']);
      const p = await a.svc.app.inject({ method: 'GET', url: `/v1/projects/${a.svc.projectId}/audit/${id}/proof`, headers: key });
      assert.equal(p.statusCode, 409);
    });
  });

  describe(`audit log witnessed by a C2SP witness without Gavel's roots lookup (${backend.name})`, () => {
    let a: AuditService;
    before(async () => { a = await startAuditService(backend, 'plain'); });
    after(async () => { await a.stop(); });

    test('verification rests on the cosignature stored at submission: VERIFIED, not NOT_WITNESSED; a tampered one is not', async () => {
      const [id] = await addEvents(a.svc.ts.store, a.svc.projectId, 3);
      const admin = await consoleMember(a.svc, ['ADMIN']);
      const verify = async () => (await a.svc.app.inject({ method: 'POST', url: `/v1/console/projects/${a.svc.projectId}/proofs/verify`, headers: admin.post, payload: { audit_event_id: id } })).json();
      const t = await a.svc.auditLog.tick({ force: true });
      assert.equal(t.witness?.kind, 'cosigned');
      const v = await verify();
      assert.equal(v.verification, 'VERIFIED', JSON.stringify(v));
      assert.equal(v.independently_witnessed, true);
      assert.equal(v.evidence.finality, 'witnessed');
      assert.match(v.reason, /no lookup/);
      // A stored cosignature that does not verify under the pinned key proves nothing.
      const db = a.svc.ts.store.db;
      const cp = await db.selectFrom('audit_checkpoints').select(['size', 'cosignatures']).where('witnessed_at', 'is not', null).orderBy('size', 'desc').executeTakeFirstOrThrow();
      const line = cp.cosignatures!;
      const forged = line.replace(/ (\S+)\n$/, (_m, sig: string) => ` ${Buffer.from(Buffer.from(sig, 'base64').map((b, i) => (i === 20 ? b ^ 1 : b))).toString('base64')}\n`);
      assert.notEqual(forged, line);
      await db.updateTable('audit_checkpoints').set({ cosignatures: forged }).where('size', '=', cp.size).execute();
      const tampered = await verify();
      assert.equal(tampered.verification, 'NOT_WITNESSED', JSON.stringify(tampered));
      await db.updateTable('audit_checkpoints').set({ cosignatures: line }).where('size', '=', cp.size).execute();
    });
  });

  describe(`audit log without a witness (${backend.name})`, () => {
    let a: AuditService;
    before(async () => { a = await startAuditService(backend, 'none'); });
    after(async () => { await a.stop(); });

    test('checkpoints are signed but not witnessed, and proofs and verification say so', async () => {
      const [id] = await addEvents(a.svc.ts.store, a.svc.projectId, 2);
      const t = await a.svc.auditLog.tick({ force: true });
      assert.equal(t.witness?.kind, 'no_witness');
      const key = await a.svc.keyHeader(['POLICY_AUTHOR']);
      const p = (await a.svc.app.inject({ method: 'GET', url: `/v1/projects/${a.svc.projectId}/audit/${id}/proof`, headers: key })).json();
      assert.equal(p.witnessed, false);
      assert.equal(p.anchored_height, null);
      assert.deepEqual(p.cosignatures, []);
      assert.ok(verifyInclusion(leafHashOfEvent(p.event), p.leaf_index, p.tree_size, p.path.map(fromBase64), fromBase64(p.root)));
      const admin = await consoleMember(a.svc, ['ADMIN']);
      const v = (await a.svc.app.inject({ method: 'POST', url: `/v1/console/projects/${a.svc.projectId}/proofs/verify`, headers: admin.post, payload: { audit_event_id: id } })).json();
      assert.equal(v.verification, 'UNAVAILABLE');
      assert.match(v.reason, /no witness is configured/);
      const info = (await a.svc.app.inject({ method: 'GET', url: `/v1/projects/${a.svc.projectId}/audit/log`, headers: key })).json();
      assert.equal(info.log_vkey, a.logVkey);
      assert.equal(info.witnessed_checkpoint, null);
    });
  });
}
