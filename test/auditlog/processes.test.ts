// Two `gavel serve` processes on one PostgreSQL log, events written by a third (this test), the
// sequencing leader killed with SIGKILL midway: the other takes over, the tree stays gapless
// (leaf indexes 0..n-1), and every checkpoint is consistent with the one before (checked here
// from the stored nodes and, independently, by a witness that cosigns only consistent heads).
// PostgreSQL only: on SQLite there is one writer process by design.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { openCheckpoint } from '../../src/domain/auditlog/checkpoint.ts';
import { parseVkey } from '../../src/domain/auditlog/note.ts';
import { bytesEqual } from '../../src/domain/auditlog/bytes.ts';
import { verifyConsistency } from '../../src/domain/auditlog/verify.ts';
import { consistencyFromStore, rootOfSize } from '../../src/services/auditlog/checkpointer.ts';
import { logIdentity } from '../../src/services/auditlog/log.ts';
import { LocalSigner } from '../../src/signer/local.ts';
import { startWitness } from '../../src/witness/server.ts';
import { backends } from '../support/backends.ts';
import { databaseUrl, spawnGavel, type GavelProcess } from '../support/process.ts';
import { addEvents } from './support.ts';

const pg = backends().find((b) => b.name === 'postgres');

test('two instances on PostgreSQL, leader SIGKILLed midway: gapless tree, consistent checkpoints', { skip: pg ? false : 'needs GAVEL_TEST_DATABASE_URL', timeout: 120_000 }, async () => {
  const ts = await pg!.open();
  const witnessDir = mkdtempSync(join(tmpdir(), 'gavel-witness-'));
  const procs: GavelProcess[] = [];
  try {
    // Both instances share the data directory, hence the checkpoint key (one log, one key).
    const id = await logIdentity(ts.store, new LocalSigner(join(ts.dataDir, 'keys')));
    const witness = await startWitness({ dataDir: witnessDir, logs: [{ origin: id.origin, vkeys: [id.vkey] }] });
    const env = {
      GAVEL_DATABASE_URL: databaseUrl(ts.options), GAVEL_DATA_DIR: ts.dataDir, GAVEL_WITNESS_URL: witness.url,
      GAVEL_WITNESS_VKEY: witness.publicKeyVkey, GAVEL_AUDIT_TICK_MS: '20', GAVEL_CHECKPOINT_INTERVAL_MS: '50', GAVEL_CHECKPOINT_MAX_EVENTS: '40',
    };
    const a = await spawnGavel(env);
    procs.push(a);
    const projectId = (await ts.store.db.selectFrom('projects').select('id').executeTakeFirstOrThrow()).id;
    const sequenced = async () => Number((await ts.store.db.selectFrom('audit_log_state').select('size').executeTakeFirstOrThrow()).size);
    // A alone: it becomes the leader and sequences.
    await addEvents(ts.store, projectId, 10);
    for (let i = 0; i < 200 && (await sequenced()) < 10; i++) await sleep(25);
    assert.ok((await sequenced()) >= 10, 'instance A sequences');
    const b = await spawnGavel(env);
    procs.push(b);

    // Writers (four concurrent loops in this process) while A leads; then kill A mid-stream.
    let writing = true;
    const writers = Array.from({ length: 4 }, async () => { let n = 0; while (writing) { await addEvents(ts.store, projectId, 1); n++; } return n; });
    await sleep(700);
    await a.kill('SIGKILL');
    await sleep(1200);
    writing = false;
    await Promise.all(writers);

    const total = Number((await ts.store.db.selectFrom('audit_events').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);
    for (let i = 0; i < 400 && (await sequenced()) < total; i++) await sleep(25);
    assert.equal(await sequenced(), total, 'instance B took over and sequenced everything');

    const rows = await ts.store.db.selectFrom('audit_events').select('leaf_index').orderBy('leaf_index').execute();
    assert.deepEqual(rows.map((r) => Number(r.leaf_index)), Array.from({ length: total }, (_, i) => i), 'leaf indexes 0..n-1, no hole, no duplicate');

    const cps = await ts.store.db.selectFrom('audit_checkpoints').select(['size', 'root', 'note', 'witnessed_at']).orderBy('size').execute();
    assert.ok(cps.length >= 3, `several checkpoints (${cps.length})`);
    const key = parseVkey(id.vkey);
    let prev: { size: number; root: Uint8Array } | undefined;
    for (const c of cps) {
      const cp = openCheckpoint(c.note, [key]).checkpoint;
      assert.equal(cp.size, Number(c.size));
      assert.ok(bytesEqual(cp.root, await rootOfSize(ts.store.db, cp.size)), `checkpoint ${cp.size} matches the stored tree`);
      if (prev) assert.ok(verifyConsistency(prev.size, cp.size, await consistencyFromStore(ts.store.db, prev.size, cp.size), prev.root, cp.root), `checkpoint ${cp.size} is consistent with ${prev.size}`);
      prev = cp;
    }
    // The witness kept cosigning across the takeover: it accepts only heads consistent with its last.
    for (let i = 0; i < 200; i++) {
      const w = await ts.store.db.selectFrom('audit_checkpoints').select('size').where('witnessed_at', 'is not', null).orderBy('size', 'desc').executeTakeFirst();
      if (w && Number(w.size) === total) break;
      await sleep(25);
    }
    const lastWitnessed = await ts.store.db.selectFrom('audit_checkpoints').select('size').where('witnessed_at', 'is not', null).orderBy('size', 'desc').executeTakeFirst();
    assert.equal(Number(lastWitnessed?.size), total, 'the newest head is witnessed after the takeover');
    await witness.close();
  } finally {
    for (const p of procs) await p.kill('SIGTERM');
    await ts.cleanup();
    rmSync(witnessDir, { recursive: true, force: true });
  }
});
