// Assembles one running Gavel: store (migrated), signer, bootstrap, HTTP server.
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Config } from './config/config.ts';
import { buildApp, type BuildOptions } from './http/app.ts';
import type { AppDeps } from './http/deps.ts';
import { systemClock, type Clock } from './lib/time.ts';
import { bootstrap, type BootstrapResult } from './services/bootstrap.ts';
import { LocalSigner } from './signer/local.ts';
import type { Signer } from './signer/signer.ts';
import { migrateToLatest } from './store/migrate.ts';
import { openStore, type Store, type StoreOptions } from './store/store.ts';
import { startAuditLog, type AuditLogRunner } from './services/auditlog/runner.ts';

export function storeOptions(config: Config): StoreOptions {
  return config.databaseUrl
    ? { kind: 'postgres', url: config.databaseUrl }
    : { kind: 'sqlite', file: join(config.dataDir, 'gavel.db') };
}

export interface Service {
  app: FastifyInstance;
  deps: AppDeps;
  bootstrap: BootstrapResult;
  /** The audit log's background sequencer/checkpointer (tick() runs one pass now). */
  auditLog: AuditLogRunner;
  /** Stops accepting, finishes in-flight requests, then closes the store. */
  close(): Promise<void>;
}

export interface ServiceOptions extends BuildOptions {
  store?: Store;
  signer?: Signer;
  clock?: Clock;
}

export async function createService(config: Config, options: ServiceOptions = {}): Promise<Service> {
  const store = options.store ?? openStore(storeOptions(config));
  await migrateToLatest(store);
  const signer = options.signer ?? new LocalSigner(join(config.dataDir, 'keys'));
  const deps: AppDeps = { config, store, signer, clock: options.clock ?? systemClock };
  const boot = await bootstrap(store);
  const app = await buildApp(deps, options);
  const auditLog = startAuditLog(store, signer, {
    tickMs: config.auditTickMs, intervalMs: config.checkpointIntervalMs, maxEvents: config.checkpointMaxEvents,
    witnessUrl: config.witnessUrl, now: () => deps.clock.now(),
    onError: (err) => app.log.error({ err }, 'audit log tick failed'),
  });
  let closing: Promise<void> | undefined;
  return {
    app, deps, bootstrap: boot, auditLog,
    close() {
      closing ??= (async () => {
        await app.close();
        await auditLog.stop();
        if (!options.store) await store.close();
      })();
      return closing;
    },
  };
}

