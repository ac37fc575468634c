// A child process that takes the audit log's leadership on a PostgreSQL schema and says so, then
// only waits: the test stops it (SIGSTOP) to stand for a paused or partitioned leader whose
// connection stays open (test/store/postgres-outage.test.ts). Args: store options as JSON, keys dir.
import { openStore, type StoreOptions } from '../../src/store/store.ts';
import { startAuditLog } from '../../src/services/auditlog/runner.ts';
import { LocalSigner } from '../../src/signer/local.ts';

const [options, keys] = [JSON.parse(process.argv[2]!) as StoreOptions, process.argv[3]!];
const runner = startAuditLog(openStore(options), new LocalSigner(keys), { tickMs: 1e9, intervalMs: 1000, maxEvents: 1000, witness: undefined, leaderIdleTimeoutMs: 1000 });
const { leader } = await runner.tick();
process.stdout.write(leader ? 'leader\n' : 'not leader\n');
setInterval(() => {}, 1 << 30);
