// Helpers of the audit-log tests: a service whose log is witnessed by a real witness process
// (in-process server, own key and SQLite), and events written the way every mutation writes them.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import type { Config } from '../../src/config/config.ts';
import { EMPTY_ROOT } from '../../src/domain/auditlog/hash.ts';
import { recordAudit } from '../../src/services/audit/record.ts';
import { startAuditLog } from '../../src/services/auditlog/runner.ts';
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
 * origin (so it never cosigns this log); 'plain' the own witness behind a front that serves C2SP's
 * add-checkpoint alone, as a tlog-witness other than Gavel's does (no roots lookup); 'none'
 * configures no witness.
 */
export async function startAuditService(backend: Backend, witness: 'own' | 'foreign' | 'plain' | 'none', overrides: Partial<Config> = {}): Promise<AuditService> {
  let w: RunningWitness | undefined;
  let front: Server | undefined;
  let logVkey = '';
  let origin = '';
  const witnessDir = mkdtempSync(join(tmpdir(), 'gavel-witness-'));
  const svc = await startService(backend, { auditTickMs: 60_000, checkpointIntervalMs: 60_000, ...overrides }, async (ts) => {
    const id = await logIdentity(ts.store, new LocalSigner(join(ts.dataDir, 'keys')));
    logVkey = id.vkey;
    origin = id.origin;
    if (witness === 'none') return {};
    w = await startWitness({ dataDir: witnessDir, logs: [{ origin: witness === 'foreign' ? 'other.example/log' : id.origin, vkeys: [id.vkey] }] });
    if (witness !== 'plain') return { witnessUrl: w.url, witnessVkey: w.publicKeyVkey };
    front = await plainWitnessFront(w.url);
    return { witnessUrl: `http://127.0.0.1:${(front.address() as AddressInfo).port}`, witnessVkey: w.publicKeyVkey };
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
      await new Promise((resolve) => (front ? front.close(resolve) : resolve(undefined)));
      await w?.close().catch(() => {});
      rmSync(witnessDir, { recursive: true, force: true });
    },
  };
}

/** Forwards POST /add-checkpoint to `url` and answers 404 to anything else, as a plain C2SP witness. */
async function plainWitnessFront(url: string): Promise<Server> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/add-checkpoint') { res.writeHead(404, { 'content-type': 'text/plain' }).end('404 page not found\n'); return; }
      void fetch(`${url}/add-checkpoint`, { method: 'POST', body: Buffer.concat(chunks) }).then(async (answer) => {
        res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'text/plain' }).end(Buffer.from(await answer.arrayBuffer()));
      }, () => res.writeHead(502).end());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

/** Writes `n` audit events of the project, one transaction each, as a mutation would. */
export async function addEvents(store: Store, projectId: string, n: number, kind = 'test.event'): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    ids.push(await store.transaction((trx) => recordAudit(trx, { projectId, kind, actor: 'system', data: { n: i, note: `event ${i}` } })));
  }
  return ids;
}

/** The audit log's tables, as a backup holds them. */
const LOG_TABLES = ['audit_events', 'audit_nodes', 'audit_log_state', 'audit_checkpoints', 'audit_witness_problem'] as const;
export type LogTable = (typeof LOG_TABLES)[number];

/**
 * Copies the log's tables aside (a backup, or a dump) under `name`; `restoreLog` puts them back,
 * each whole, or only the ones named (a partial restore). Plain SQL, the same on both engines.
 */
export async function snapshotLog(store: Store, name: string): Promise<void> {
  for (const t of LOG_TABLES) await sql.raw(`create table ${name}_${t} as select * from ${t}`).execute(store.db);
}

export async function restoreLog(store: Store, name: string, tables: readonly LogTable[] = LOG_TABLES): Promise<void> {
  await store.transaction(async (trx) => {
    for (const t of tables) {
      await sql.raw(`delete from ${t}`).execute(trx);
      await sql.raw(`insert into ${t} select * from ${name}_${t}`).execute(trx);
    }
  });
}

/** The log as a copy taken before its first event holds it: no events, nodes or checkpoints, size 0 (its origin kept). */
export async function emptyLog(store: Store): Promise<void> {
  await store.transaction(async (trx) => {
    for (const t of ['audit_events', 'audit_nodes', 'audit_checkpoints', 'audit_witness_problem']) await sql.raw(`delete from ${t}`).execute(trx);
    await trx.updateTable('audit_log_state').set({ size: 0, root: Buffer.from(EMPTY_ROOT) }).where('id', '=', 1).execute();
  });
}

/**
 * The service started again on `a`'s store, witnessed by `a`'s witness, once `a`'s service is
 * closed (`a.svc.close()`): a restart. Its first tick has run. Stopping it leaves the store to `a.stop()`.
 */
export async function restartAuditService(a: AuditService, overrides: Partial<Config> = {}): Promise<TestService> {
  const { ts } = a.svc;
  const { witnessUrl, witnessVkey } = a.svc.deps.config;
  const svc = await startService({ name: ts.options.kind, open: async () => ts }, {
    auditTickMs: 60_000, checkpointIntervalMs: 60_000, ...overrides, ...(witnessUrl && witnessVkey ? { witnessUrl, witnessVkey } : {}),
  });
  await svc.auditLog.firstTick;
  return { ...svc, stop: () => svc.close() };
}

/**
 * A loopback URL nothing listens on: a witness that is down. Port 1, below the ephemeral range: a
 * port this process freed could be taken by another test file's server meanwhile, or by the
 * client's own connection to it (a TCP self-connect), and then answer.
 */
export async function deadWitnessUrl(): Promise<string> {
  return 'http://127.0.0.1:1';
}

/**
 * The audit log's loop over `a`'s store, on the clock `now`, ticking only when a test asks (a
 * minute apart otherwise); its witness is `url` (default: `a`'s own) under `a`'s witness key.
 */
export function clockedAuditLog(a: AuditService, now: () => number, url = a.svc.deps.config.witnessUrl!): ReturnType<typeof startAuditLog> {
  return startAuditLog(a.svc.ts.store, new LocalSigner(join(a.svc.ts.dataDir, 'keys')), {
    tickMs: 60_000, intervalMs: 60_000, maxEvents: 10_000, witness: { url, vkey: a.svc.deps.config.witnessVkey! }, now: () => new Date(now()),
  });
}

/**
 * The log restored under a running leader (`runner`, `a`'s own loop stopped): a checkpoint, one
 * event more cosigned by the witness, then the older copy put back, so the witness holds one event
 * more than the log (the boundary).
 */
export async function restoreUnderLeader(a: AuditService, runner: ReturnType<typeof startAuditLog>): Promise<void> {
  const { store } = a.svc.ts;
  await a.svc.close();
  await runner.firstTick;
  await addEvents(store, a.svc.projectId, 2);
  await runner.tick({ force: true });
  await snapshotLog(store, 'older');
  await addEvents(store, a.svc.projectId, 1);
  assert.equal((await runner.tick({ force: true })).witness?.kind, 'cosigned');
  await restoreLog(store, 'older');
}
