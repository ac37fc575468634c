// npm run bench:audit — the verifiable audit log (not a test).
// 1. Append: events written by recordAudit (as every mutation writes them), then sequenced and
//    integrated into the tree by the real sequencer; beside it, raw SHA-256 of the same leaf bytes.
// 2. Inclusion proofs at 10^4 … 10^7 leaves through the real proof path (a query for the
//    O(log n) nodes, one more for a single leaf's hash, kept in its event's row since decision
//    0603; then assembly). The big trees are generated straight into audit_nodes and stand-in
//    audit_events rows (exactly what the sequencer would have written) because sequencing
//    10^7 events one by one on a 2-core machine would not fit the time budget; the tree grows
//    in place, so each size is measured on a table holding exactly that tree.
// Env: BENCH_MAX_LEAVES (default 1e7), BENCH_EVENTS (default 20000), BENCH_DATABASE_URL (adds a
// PostgreSQL append figure).
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { encodeLeaf, leafHash } from '../src/domain/auditlog/index.ts';
import { appendLeaves, nodePos, planAppend, readerFromNodes, type StoredNode } from '../src/domain/auditlog/tree.ts';
import { verifyInclusion } from '../src/domain/auditlog/verify.ts';
import { recordAudit } from '../src/services/audit/record.ts';
import { eventRecord, ensureLogState } from '../src/services/auditlog/log.ts';
import { inclusionFromStore } from '../src/services/auditlog/proofs.ts';
import { rootOfSize } from '../src/services/auditlog/checkpointer.ts';
import { sequencePending } from '../src/services/auditlog/sequencer.ts';
import { migrateToLatest } from '../src/store/migrate.ts';
import { openStore, type StoreOptions } from '../src/store/store.ts';
import { scratchDir } from './lib/scratch-dir.ts';
import { countFromEnv } from './lib/env-count.ts';

const MAX = countFromEnv('BENCH_MAX_LEAVES', 1e7, { max: 2 ** 40 });
const EVENTS = countFromEnv('BENCH_EVENTS', 20_000, { max: 10_000_000 });
const dir = scratchDir('gavel-bench-audit-');
const fmt = (n: number) => Math.round(n).toLocaleString('en-US');

async function appendBench(label: string, options: StoreOptions): Promise<void> {
  const store = openStore(options);
  await migrateToLatest(store);
  await ensureLogState(store);
  const projectId = 'prj_' + '0'.repeat(26);
  let t = performance.now();
  for (let i = 0; i < EVENTS; i += 100) {
    await store.transaction(async (trx) => {
      for (let j = 0; j < 100; j++) await recordAudit(trx, { projectId, kind: 'decision.made', actor: 'key_bench', data: { decision: 'ALLOW', n: i + j, amount: { minor: 1234, currency: 'EUR' } } });
    });
  }
  const writeMs = performance.now() - t;
  t = performance.now();
  const n = await sequencePending(store, { maxBatches: 1_000 });
  const seqMs = performance.now() - t;
  // Baseline: SHA-256 of the same leaf bytes, nothing else.
  const rows = await store.db.selectFrom('audit_events').select(['id', 'project_id', 'kind', 'actor', 'created_at', 'data']).execute();
  const leaves = rows.map((r) => encodeLeaf(eventRecord(r)));
  t = performance.now();
  for (const l of leaves) leafHash(l);
  const hashMs = performance.now() - t;
  console.log(`${label.padEnd(10)} append: ${fmt(n)} events sequenced+integrated in ${seqMs.toFixed(0)} ms = ${fmt(n / seqMs * 1000)} events/s` +
    ` | writing them (recordAudit, 100/tx): ${fmt(EVENTS / writeMs * 1000)} events/s | baseline raw SHA-256 of the same leaves: ${fmt(n / hashMs * 1000)} leaves/s`);
  await store.close();
}

async function proofBench(): Promise<void> {
  const file = join(dir, 'tree.db');
  const store0 = openStore({ kind: 'sqlite', file });
  await migrateToLatest(store0);
  await store0.close();
  let raw!: Database.Database;
  let insert!: Database.Statement;
  let insertMany!: Database.Statement;
  const ROWS = 200;
  let readPeak!: { get(level: number, index: number): unknown };
  let insertLeaf!: Database.Statement;
  const openRaw = () => {
    raw = new Database(file);
    raw.pragma('journal_mode = OFF');
    raw.pragma('synchronous = OFF');
    // Keyed (pos, level) since migration 0602: pos is the last leaf a node covers.
    insert = raw.prepare('insert into audit_nodes (pos, level, idx, hash) values (?, ?, ?, ?)');
    insertMany = raw.prepare(`insert into audit_nodes (pos, level, idx, hash) values ${Array(ROWS).fill('(?, ?, ?, ?)').join(', ')}`);
    // A single leaf's hash lives in its event's row (decision 0603): a stand-in event per leaf.
    insertLeaf = raw.prepare(`insert into audit_events (id, project_id, kind, actor, created_at, data, leaf_index, leaf_hash) values (?, 'prj_bench', 'bench', 'system', '2026-01-01T00:00:00.000Z', '{}', ?, ?)`);
    const peakNode = raw.prepare('select hash from audit_nodes where level = ? and idx = ?');
    const peakLeaf = raw.prepare('select leaf_hash as hash from audit_events where leaf_index = ?');
    readPeak = { get: (level: number, index: number) => (level === 0 ? peakLeaf.get(index) : peakNode.get(level, index)) };
  };
  openRaw();
  let size = 0;
  const sizes = [1e4, 1e5, 1e6, 1e7].filter((s) => s <= MAX);
  const results: string[] = [];
  let genMs = 0;
  let genHashMs = 0;
  for (const target of sizes) {
    let t = performance.now();
    while (size < target) {
      const n = Math.min(65_536, target - size);
      const leaves: Uint8Array[] = new Array(n);
      const th = performance.now();
      for (let i = 0; i < n; i++) {
        const b = Buffer.allocUnsafe(8);
        b.writeBigUInt64BE(BigInt(size + i));
        leaves[i] = leafHash(b);
      }
      genHashMs += performance.now() - th;
      const peaks: StoredNode[] = planAppend(size).map((a) => ({ ...a, hash: (readPeak.get(a.level, a.index) as { hash: Buffer }).hash }));
      const r = appendLeaves(size, leaves, readerFromNodes(peaks));
      raw.transaction(() => {
        const params = (node: StoredNode) => [nodePos(node.level, node.index), node.level, node.index, Buffer.from(node.hash.buffer, node.hash.byteOffset, 32)];
        const subtrees = r.nodes.filter((node) => node.level > 0);
        for (const leaf of r.nodes) if (leaf.level === 0) insertLeaf.run(`aud_${leaf.index}`, leaf.index, Buffer.from(leaf.hash.buffer, leaf.hash.byteOffset, 32));
        let i = 0;
        for (; i + ROWS <= subtrees.length; i += ROWS) insertMany.run(subtrees.slice(i, i + ROWS).flatMap(params));
        for (; i < subtrees.length; i++) insert.run(...params(subtrees[i]!));
      })();
      size = r.size;
    }
    genMs += performance.now() - t;
    // Measure through the service's proof path on the store (Kysely over better-sqlite3).
    const store = openStore({ kind: 'sqlite', file: join(dir, 'tree.db') });
    raw.close();
    const root = await rootOfSize(store.db, size);
    const idx = Array.from({ length: 3000 }, () => randomBytes(6).readUIntBE(0, 6) % size);
    for (let i = 0; i < 200; i++) await inclusionFromStore(store.db, idx[i]!, size); // warm-up
    const lat: number[] = [];
    let ok = 0;
    let verifyMs = 0;
    for (const i of idx) {
      t = performance.now();
      const proof = await inclusionFromStore(store.db, i, size);
      lat.push(performance.now() - t);
      const b = Buffer.allocUnsafe(8);
      b.writeBigUInt64BE(BigInt(i));
      const tv = performance.now();
      if (verifyInclusion(leafHash(b), i, size, proof, root)) ok++;
      verifyMs += performance.now() - tv;
    }
    await store.close();
    lat.sort((a, b) => a - b);
    const q = (p: number) => lat[Math.min(lat.length - 1, Math.floor(p * lat.length))]!.toFixed(3);
    results.push(`proof at ${size.toExponential(0).padEnd(5)} leaves: p50 ${q(0.5)} ms, p99 ${q(0.99)} ms, mean ${(lat.reduce((a, b) => a + b, 0) / lat.length).toFixed(3)} ms` +
      ` (${ok}/${idx.length} verified) | baseline: verifying it (≈${Math.ceil(Math.log2(size))} SHA-256) ${(verifyMs / idx.length).toFixed(3)} ms`);
    console.log(results[results.length - 1]);
    if (target !== sizes[sizes.length - 1]) openRaw();
  }
  console.log(`generated ${fmt(size)} leaves (${fmt(2 * size)} nodes) in ${(genMs / 1000).toFixed(1)} s, of which leaf hashing ${(genHashMs / 1000).toFixed(1)} s`);

}

console.log(`audit log benchmark (SQLite${process.env.BENCH_DATABASE_URL ? ' and PostgreSQL' : ''}), ${EVENTS} events to append, proofs up to ${MAX.toExponential(0)} leaves`);
const t0 = performance.now();
await appendBench('SQLite', { kind: 'sqlite', file: join(dir, 'append.db') });
if (process.env.BENCH_DATABASE_URL) {
  const schema = `gavel_bench_${randomBytes(4).toString('hex')}`;
  const c = new pg.Client({ connectionString: process.env.BENCH_DATABASE_URL });
  await c.connect();
  await c.query(`create schema ${schema}`);
  try { await appendBench('PostgreSQL', { kind: 'postgres', url: process.env.BENCH_DATABASE_URL, schema }); } finally { await c.query(`drop schema ${schema} cascade`); await c.end(); }
}
await proofBench();
console.log(`total ${((performance.now() - t0) / 1000).toFixed(1)} s; target: append ≥ 3000 events/s, proof at 1e7 < 2 ms`);
