// Helpers of the audit-log tests: a service whose log is witnessed by a real witness process
// (in-process server, own key and SQLite), and events written the way every mutation writes them.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Config } from '../../src/config/config.ts';
import { recordAudit } from '../../src/services/audit/record.ts';
import { logIdentity } from '../../src/services/auditlog/log.ts';
import { LocalSigner } from '../../src/signer/local.ts';
import type { Store } from '../../src/store/store.ts';
import { startWitness, type RunningWitness } from '../../src/witness/server.ts';
import type { Backend } from '../support/backends.ts';
import { startService, type TestService } from '../support/service.ts';

export interface AuditService {
  svc: TestService;
  witness: RunningWitness | undefined;
  logVkey: string;
  origin: string;
  stop(): Promise<void>;
}

/**
 * witness: 'own' starts a witness that accepts this log; 'foreign' one that accepts only another
 * origin (so it never cosigns this log); 'none' configures no witness.
 */
export async function startAuditService(backend: Backend, witness: 'own' | 'foreign' | 'none', overrides: Partial<Config> = {}): Promise<AuditService> {
  let w: RunningWitness | undefined;
  let logVkey = '';
  let origin = '';
  const witnessDir = mkdtempSync(join(tmpdir(), 'gavel-witness-'));
  const svc = await startService(backend, { auditTickMs: 60_000, checkpointIntervalMs: 60_000, ...overrides }, async (ts) => {
    const id = await logIdentity(ts.store, new LocalSigner(join(ts.dataDir, 'keys')));
    logVkey = id.vkey;
    origin = id.origin;
    if (witness === 'none') return {};
    w = await startWitness({ dataDir: witnessDir, logs: [{ origin: witness === 'own' ? id.origin : 'other.example/log', vkeys: [id.vkey] }] });
    return { witnessUrl: w.url, witnessVkey: w.publicKeyVkey };
  });
  // The loop's first tick is due at once (a zero timer set as the service started). Wait until it
  // has run, so that it cannot sequence and checkpoint events a test adds next: a timer of ours
  // fires after it, and a tick of ours is chained behind it. The next is a minute away.
  await new Promise((resolve) => setTimeout(resolve, 0));
  await svc.auditLog.tick();
  return {
    svc, witness: w, logVkey, origin,
    async stop() {
      await svc.stop();
      await w?.close().catch(() => {});
      rmSync(witnessDir, { recursive: true, force: true });
    },
  };
}

/** Writes `n` audit events of the project, one transaction each, as a mutation would. */
export async function addEvents(store: Store, projectId: string, n: number, kind = 'test.event'): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    ids.push(await store.transaction((trx) => recordAudit(trx, { projectId, kind, actor: 'system', data: { n: i, note: `event ${i}` } })));
  }
  return ids;
}
