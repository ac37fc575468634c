// Ad-hoc: the SQLite writer alone (no HTTP): decision units per second with 20 and 200 in flight.
// A steadier figure than end-to-end req/s on a noisy VM, for changes to the write path.
import { join } from 'node:path';
import { scratchDir } from './lib/scratch-dir.ts';
import { openStore } from '../src/store/store.ts';
import { migrateToLatest } from '../src/store/migrate.ts';
import { threadWriter } from '../src/services/writer/thread.ts';
import type { GavelProcedures } from '../src/services/writer/procedures.ts';
const file = join(scratchDir('gavel-bench-writer-'), 'g.db');
const store = openStore({ kind: 'sqlite', file }); await migrateToLatest(store);
await (await import('../src/services/auditlog/log.ts')).ensureLogState(store);
const w = threadWriter<GavelProcedures>({ file });
const plan = () => ({ projectId: 'prj_x', actor: 'key_x', requestId: 'req_x', at: new Date().toISOString(), failure: null, policyVersion: 1,
  input: { agent: 'did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK', action: 'pay', resource: 'resource://shop/basket-1', amount: { minor: 4200, currency: 'EUR' } },
  permit: { commitment: 'c'.repeat(43), chain: ['c'.repeat(43)], delegation_depth: 0, delegators: [], counters: [] },
  policy: { decision: 'ALLOW' as const, reason_code: 'policy_allow', matched_rules: ['amount-pay'] } });
const seq = setInterval(() => { void w.call('auditlog.sequence', { max: 64, now: new Date() }).then(async function more(b): Promise<void> { if (b.count === 64) return w.call('auditlog.sequence', { max: 64, now: new Date() }).then(more); }); }, 100);
for (const waves of [20, 200]) {
  const t = performance.now(); let n = 0;
  const end = t + 4000;
  await Promise.all(Array.from({ length: waves }, async () => { while (performance.now() < end) { await w.call('authorize.commit', plan()); n++; } }));
  console.log(`${waves} in flight: ${(n / ((performance.now() - t) / 1000)).toFixed(0)} decisions/s`);
}
clearInterval(seq); await w.close(); await store.close();
