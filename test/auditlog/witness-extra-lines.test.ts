// A witness's 200 answer may carry lines besides its cosignature. Only the cosignature lines the
// pinned key verifies are kept with the checkpoint: a stray line naming the log's key (which the
// log's own signature check then rejects) must not turn every proof of that checkpoint INVALID.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { backends } from '../support/backends.ts';
import { startWitness, type RunningWitness } from '../../src/witness/server.ts';
import { logIdentity } from '../../src/services/auditlog/log.ts';
import { LocalSigner } from '../../src/signer/local.ts';
import { parseVkey } from '../../src/domain/auditlog/note.ts';
import { runAuditVerify } from '../../src/cli/audit-verify.ts';
import { startService } from '../support/service.ts';
import { consoleMember } from '../support/console.ts';
import { addEvents } from './support.ts';

const sink = () => { let text = ''; return { write: (s: string) => { text += s; }, get text() { return text; } }; };

for (const backend of backends()) {
  test(`extra lines in a witness's answer are not stored with the checkpoint (${backend.name})`, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gavel-wx-'));
    let witness: RunningWitness | undefined;
    let logVkey = '';
    let stray = '';
    // In front of a genuine witness: its answer, then a line claiming to be the log's signature.
    const front = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        void fetch(`${witness!.url}${req.url}`, { method: req.method!, ...(req.method === 'POST' ? { body: Buffer.concat(chunks) } : {}) }).then(async (answer) => {
          const body = await answer.text();
          res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'text/plain' })
            .end(answer.status === 200 && req.url === '/add-checkpoint' ? body + stray : body);
        }, () => res.writeHead(502).end());
      });
    });
    await new Promise<void>((resolve) => front.listen(0, '127.0.0.1', resolve));
    const svc = await startService(backend, { auditTickMs: 60_000, checkpointIntervalMs: 60_000 }, async (ts) => {
      const id = await logIdentity(ts.store, new LocalSigner(join(ts.dataDir, 'keys')));
      logVkey = id.vkey;
      const k = parseVkey(id.vkey);
      stray = `\u2014 ${k.name} ${Buffer.concat([Buffer.from(k.keyId), Buffer.alloc(64)]).toString('base64')}\n`;
      witness = await startWitness({ dataDir: join(dir, 'w'), logs: [{ origin: id.origin, vkeys: [id.vkey] }] });
      return { witnessUrl: `http://127.0.0.1:${(front.address() as AddressInfo).port}`, witnessVkey: witness.publicKeyVkey };
    });
    // As startAuditService does: let the loop's first tick run before adding events.
    await new Promise((resolve) => setTimeout(resolve, 0));
    await svc.auditLog.tick();
    try {
      const [eventId] = await addEvents(svc.ts.store, svc.projectId, 3);
      const t = await svc.auditLog.tick({ force: true });
      assert.equal(t.witness?.kind, 'cosigned', JSON.stringify(t.witness));
      const res = await svc.app.inject({ method: 'GET', url: `/v1/projects/${svc.projectId}/audit/${eventId}/proof`, headers: await svc.keyHeader(['APPROVER']) });
      assert.equal(res.statusCode, 200, res.body);
      assert.ok(!res.json().checkpoint.includes(stray), 'the stray line is not part of the stored checkpoint');
      writeFileSync(join(dir, 'proof.json'), res.body);
      const out = sink();
      assert.equal(await runAuditVerify([join(dir, 'proof.json'), '--log-key', logVkey, '--witness-key', witness!.publicKeyVkey], out, sink()), 0, out.text);
      const auditor = await consoleMember(svc, ['AUDITOR']);
      const v = await svc.app.inject({ method: 'POST', url: `/v1/console/projects/${svc.projectId}/proofs/verify`, headers: auditor.post, payload: { audit_event_id: eventId } });
      assert.equal(v.json().verification, 'VERIFIED', v.body);
    } finally {
      await svc.stop();
      await witness?.close();
      await new Promise((resolve) => front.close(resolve));
      rmSync(dir, { recursive: true, force: true });
    }
  });
}
