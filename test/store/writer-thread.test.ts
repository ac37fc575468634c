// The SQLite writer thread and what it relies on: outcomes settle only once their commit is on disk
// (invariant 1 with synchronous=NORMAL), one fdatasync covers every commit before it, a lock held
// elsewhere never stalls this event loop, errors keep their class across the thread boundary, and
// close() settles what is pending.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { writeFileSync } from 'node:fs';
import BetterSqlite3 from 'better-sqlite3';
import { sql } from 'kysely';
import { backends } from '../support/backends.ts';
import { WalSync, WalSyncNow } from '../../src/store/sqlite/wal-sync.ts';
import { MAX_CALLS_PER_MESSAGE, threadWriter } from '../../src/services/writer/thread.ts';
import { jsonProcedures, type GavelProcedures } from '../../src/services/writer/procedures.ts';
import { NonceTaken } from '../../src/services/executions/errors.ts';
import { recordedDecisions } from '../support/decisions.ts';
import { PROBE_CHANNEL, type ProbeMessage } from '../support/fdatasync-probe-channel.ts';

const sqlite = backends().find((b) => b.name === 'sqlite')!;

test('writer thread: an outcome settles only after a flush that began after its commit; the next batch does not wait for it', async () => {
  const ts = await sqlite.open();
  const flushes: (() => void)[] = [];
  const writer = threadWriter<GavelProcedures>({ file: ts.store.file!, durable: () => new Promise<void>((resolve) => flushes.push(resolve)) });
  try {
    let settled = 0;
    const first = writer.call('audit.record', { projectId: 'prj_x', kind: 'a', actor: 'system', data: {} }).then((v) => { settled++; return v; });
    while (flushes.length < 1) await sleep(5);
    const committed = await ts.store.db.selectFrom('audit_events').select('id').where('kind', '=', 'a').execute();
    assert.equal(committed.length, 1, 'committed (visible to another connection)');
    assert.equal(settled, 0, 'committed but not flushed: not answered');
    // The next batch commits while the first waits for the disk.
    const second = writer.call('audit.record', { projectId: 'prj_x', kind: 'b', actor: 'system', data: {} }).then((v) => { settled++; return v; });
    while (flushes.length < 2) await sleep(5);
    assert.equal(settled, 0);
    flushes[0]!();
    assert.match(await first, /^aud_/);
    assert.equal(settled, 1);
    flushes[1]!();
    assert.match(await second, /^aud_/);
  } finally { await writer.close(); await ts.cleanup(); }
});

test('WalSync: one fdatasync covers every commit requested before it began; a failure is never forgotten', async () => {
  const ts = await sqlite.open();
  try {
    await ts.store.db.insertInto('settings').values({ key: 'x', value: '1' }).execute(); // the WAL exists
    const wal = new WalSync(ts.store.file!);
    await Promise.all(Array.from({ length: 100 }, () => wal.durable()));
    assert.ok(wal.syncs >= 1 && wal.syncs <= 3, `100 concurrent requests cost ${wal.syncs} fdatasyncs`);
    await wal.close();
    const missing = new WalSync(`${ts.dataDir}/no-such.db`);
    await assert.rejects(missing.durable(), /ENOENT/);
    await assert.rejects(missing.durable(), /ENOENT/, 'after a failed sync nothing is acknowledged again');
  } finally { await ts.cleanup(); }
});

test('writer thread: it flushes the WAL itself before posting any outcome, lone calls and busy turns alike', async () => {
  const ts = await sqlite.open();
  const writer = threadWriter<GavelProcedures>({ file: ts.store.file!, json: jsonProcedures });
  try {
    for (let i = 0; i < 5; i++) assert.match(await writer.call('audit.record', { projectId: 'prj_x', kind: 'lone', actor: 'system', data: { i } }), /^aud_/);
    assert.equal(writer.syncs, 5, 'each lone call: one fdatasync on the writer thread, after its commit');
    assert.equal(writer.answers, 5);
    // Calls from many turns while batches run: those that arrive during a flush make the next batch,
    // and no batch's outcomes leave before their own flush (decision 0022).
    const ids = await Promise.all(Array.from({ length: 40 }, async (_, turn) => {
      await sleep(turn % 8);
      return Promise.all(Array.from({ length: 25 }, (_, i) => writer.call('audit.record', { projectId: 'prj_x', kind: 'busy', actor: 'system', data: { turn, i } })));
    }));
    assert.equal(new Set(ids.flat()).size, 1000);
    const rows = await ts.store.db.selectFrom('audit_events').select('id').where('kind', '=', 'busy').execute();
    assert.equal(rows.length, 1000);
    assert.equal(writer.syncs, writer.answers, `every message of outcomes was flushed on the writer thread first (${writer.syncs} flushes, ${writer.answers} messages)`);
    assert.ok(writer.answers < 5 + 1000, `busy turns shared batches (${writer.answers} messages of outcomes)`);
  } finally { await writer.close(); await ts.cleanup(); }
});

test('writer thread: the flush before each answer is a real fdatasync of the WAL, and no answer leaves while it runs', async () => {
  // The probe wraps the thread's real fdatasync (nothing stands in for it) and holds each one 150 ms.
  const HOLD_MS = 150;
  const ts = await sqlite.open();
  const seen: ProbeMessage[] = [];
  const probe = new BroadcastChannel(PROBE_CHANNEL);
  probe.onmessage = (m: MessageEvent) => { seen.push(m.data as ProbeMessage); };
  // Read by the probe when the thread starts (on the first call), from the environment it copies.
  process.env.GAVEL_PROBE_FLUSH_MS = String(HOLD_MS);
  const writer = threadWriter<GavelProcedures>({ file: ts.store.file!, json: jsonProcedures, execArgv: ['--import', new URL('../support/fdatasync-probe.ts', import.meta.url).href] });
  try {
    const wal = `${ts.store.file!}-wal`;
    const ended = () => seen.filter((m) => m.phase === 'end' && m.path === wal).length;
    // Each call starts with the thread idle (its last flush ended, as the probe says), so that its
    // own flush, and no earlier one, stands between its commit and its answer.
    const idle = async (flushes: number) => { for (let waited = 0; ended() < flushes && waited < 5000; waited += 5) await sleep(5); };
    for (let i = 0; i < 4; i++) {
      await idle(i);
      const asked = performance.now();
      assert.match(await writer.call('audit.record', { projectId: 'prj_x', kind: 'probed', actor: 'system', data: { i } }), /^aud_/);
      const took = performance.now() - asked;
      // A causal bound, not a speed: the answer cannot come before its held flush has run.
      assert.ok(took >= HOLD_MS - 1, `answer ${i} came ${took.toFixed(1)} ms after the call, before its flush ended`);
    }
    await idle(4);
    assert.equal(ended(), 4, `each answer followed an fdatasync of ${wal}, and nothing else was flushed (${JSON.stringify(seen)})`);
    assert.equal(writer.answers, 4);
  } finally { delete process.env.GAVEL_PROBE_FLUSH_MS; probe.close(); await writer.close(); await ts.cleanup(); }
});

test('WalSyncNow: a flush that cannot be made throws, now and ever after', async () => {
  const ts = await sqlite.open();
  try {
    await ts.store.db.insertInto('settings').values({ key: 'x', value: '1' }).execute(); // the WAL exists
    const now = new WalSyncNow(ts.store.file!);
    now.sync();
    now.sync();
    now.close();
    const missing = new WalSyncNow(`${ts.dataDir}/no-such.db`);
    assert.throws(() => missing.sync(), /ENOENT/);
    writeFileSync(`${ts.dataDir}/no-such.db-wal`, ''); // a flush could now be made: it still is not
    assert.throws(() => missing.sync(), /ENOENT/, 'after a failed flush nothing is said to be durable again');
  } finally { await ts.cleanup(); }
});

test('waiting for a write lock held elsewhere does not stall the event loop', async () => {
  const ts = await sqlite.open();
  const other = new BetterSqlite3(ts.store.file!);
  try {
    // SQLite's own busy handler would sleep in place: the store's connection must not have one.
    assert.deepEqual(await sql`pragma busy_timeout`.execute(ts.store.db).then((r) => r.rows), [{ timeout: 0 }]);
    other.exec('begin immediate');
    let settled = false;
    const write = ts.store.transaction(async (trx) => { await trx.insertInto('settings').values({ key: 'y', value: '1' }).execute(); })
      .finally(() => { settled = true; });
    // Timer turns while the lock is held, however slowly a busy machine gives them. A loop stalled in
    // a wait for the lock (the lock's holder is this thread: it cannot let go meanwhile) would give
    // them only between waits, each ending in SQLITE_BUSY, until the write gave up.
    for (let turn = 0; turn < 10; turn++) await sleep(1);
    assert.equal(settled, false, 'the loop turned ten times while the write waited for the lock');
    other.exec('commit');
    await write;
    const row = await ts.store.db.selectFrom('settings').select('value').where('key', '=', 'y').executeTakeFirst();
    assert.equal(row?.value, '1');
  } finally { other.close(); await ts.cleanup(); }
});

test('writer thread: errors keep their class, results are durable and visible, close settles what is pending', async () => {
  const ts = await sqlite.open();
  // As the service starts it: decisions cross as JSON text, everything else by structured clone.
  const writer = threadWriter<GavelProcedures>({ file: ts.store.file!, json: jsonProcedures });
  try {
    const ids = await Promise.all(Array.from({ length: 200 }, (_, i) => writer.call('audit.record', { projectId: 'prj_x', kind: 'test', actor: 'system', data: { i } })));
    assert.equal(new Set(ids).size, 200);
    const rows = await ts.store.db.selectFrom('audit_events').select('id').where('kind', '=', 'test').execute();
    assert.equal(rows.length, 200, 'every acknowledged unit is visible to this thread at once');
    // A decision whose execution nonce is taken comes back as NonceTaken, which executions relies on.
    const plan = (nonce: string) => ({
      projectId: 'prj_x', actor: 'system', requestId: 'req_x', at: new Date().toISOString(), failure: null, policyVersion: 1,
      input: { agent: 'did:key:z6Mkx', action: 'pay', resource: 'resource://a' },
      permit: null, policy: { decision: 'ALLOW' as const, reason_code: 'policy_allow', matched_rules: [] },
      execution: { executionId: `exe_${nonce}`, instanceId: 'i', nonce, fingerprint: 'f', call: '{"merchant":"m","operation":"o","payload":{}}', merchant: 'm', operation: 'o', agent: 'did:key:z6Mkx', action: 'pay', resource: 'resource://a' },
    });
    const first = await writer.call('authorize.commit', plan('n1'));
    assert.equal(first.decision, 'ALLOW');
    await assert.rejects(writer.call('authorize.commit', plan('n1')), (e) => e instanceof NonceTaken);
    const decisions = await recordedDecisions(ts.store.db);
    assert.equal(decisions.length, 1, 'the loser decided nothing: its decision rolled back with the reservation');
    const pending = writer.call('audit.record', { projectId: 'prj_x', kind: 'last', actor: 'system', data: {} });
    await writer.close();
    assert.match(await pending, /^aud_/, 'close waited for the pending unit');
    await assert.rejects(writer.call('audit.record', { projectId: 'prj_x', kind: 'late', actor: 'system', data: {} }), /closed/);
  } finally { await writer.close(); await ts.cleanup(); }
});

test('writer thread: a long turn\'s calls leave 32 to a message as they are made, not all at its end', async () => {
  const ts = await sqlite.open();
  const writer = threadWriter<GavelProcedures>({ file: ts.store.file!, json: jsonProcedures });
  try {
    const call = (i: number) => writer.call('audit.record', { projectId: 'prj_x', kind: 'turn', actor: 'system', data: { i } });
    const calls = Array.from({ length: MAX_CALLS_PER_MESSAGE - 1 }, (_, i) => call(i));
    assert.equal(writer.messages, 0, 'fewer than a message\'s worth wait for the end of the turn');
    calls.push(call(MAX_CALLS_PER_MESSAGE - 1));
    assert.equal(writer.messages, 1, 'the 32nd call posts its message at once, in the same turn');
    for (let i = MAX_CALLS_PER_MESSAGE; i < 100; i++) calls.push(call(i));
    assert.equal(writer.messages, 3);
    const ids = await Promise.all(calls);
    assert.equal(writer.messages, 4, 'the last 4 left at the end of the turn');
    assert.equal(new Set(ids).size, 100);
    const rows = await ts.store.db.selectFrom('audit_events').select('id').where('kind', '=', 'turn').execute();
    assert.equal(rows.length, 100, 'every call of every message committed');
  } finally { await writer.close(); await ts.cleanup(); }
});

test('writer thread: in a long turn, a new call first takes the outcomes already posted, so their answers need not wait for the turn to end', async () => {
  const ts = await sqlite.open();
  const writer = threadWriter<GavelProcedures>({ file: ts.store.file!, json: jsonProcedures });
  try {
    const call = (i: number) => writer.call('audit.record', { projectId: 'prj_x', kind: 'poll', actor: 'system', data: { i } });
    await call(0); // the thread is up
    let firstSettled = false;
    const first = call(1).then((id) => { firstSettled = true; return id; });
    // One synchronous turn, as a long poll phase is: post the call now, then keep the loop busy until
    // the thread has committed, flushed and posted its outcome.
    await new Promise<void>((resolve) => setImmediate(resolve)); // the call's message leaves
    const deadline = Date.now() + 10_000;
    // `<=`: the thread counts a message just after posting it, so this thread may have taken call 0's
    // outcome before the count shows it.
    while (writer.outcomesPosted <= writer.outcomesTaken && Date.now() < deadline) { /* busy, as a long turn is */ }
    assert.ok(writer.outcomesPosted > writer.outcomesTaken, 'the thread posted its outcome while this thread was busy');
    const answers = writer.answers;
    const second = call(2);
    assert.equal(writer.answers, answers + 1, 'the new call took the waiting outcome within the same turn');
    assert.equal(writer.outcomesTaken, writer.outcomesPosted);
    assert.equal(firstSettled, false, 'its promise settles when this turn ends, before the next message is read');
    assert.match(await first, /^aud_/);
    assert.match(await second, /^aud_/);
  } finally { await writer.close(); await ts.cleanup(); }
});

test('writer thread: a message that cannot be sent fails each of its calls, and the writer goes on', async () => {
  const ts = await sqlite.open();
  const writer = threadWriter<GavelProcedures>({ file: ts.store.file!, json: jsonProcedures });
  try {
    const good = (i: number) => writer.call('audit.record', { projectId: 'prj_x', kind: 'sent', actor: 'system', data: { i } });
    // A function cannot be cloned: the message holding it fails, every call in it with it.
    const calls = [good(0), writer.call('audit.record', { projectId: 'prj_x', kind: 'x', actor: 'system', data: { f: () => 1 } as never }), good(1)];
    const outcomes = await Promise.allSettled(calls);
    assert.deepEqual(outcomes.map((o) => o.status), ['rejected', 'rejected', 'rejected']);
    assert.match(String((outcomes[1] as PromiseRejectedResult).reason), /could not be cloned/);
    assert.equal(writer.pending, 0, 'nothing is left waiting');
    assert.match(await good(2), /^aud_/, 'the next message is sent and answered');
  } finally { await writer.close(); await ts.cleanup(); }
});

test('NonceTaken crosses the thread boundary as itself', async () => {
  const { fromWire, toWire } = await import('../../src/services/writer/wire.ts');
  const { Problem } = await import('../../src/http/problem.ts');
  assert.ok(fromWire(structuredClone(toWire(new NonceTaken()))) instanceof NonceTaken);
  const p = fromWire(structuredClone(toWire(new Problem(409, 'agent_already_frozen', 'frozen', { extra: { state: { a: 1 } } }))));
  assert.ok(p instanceof Problem);
  assert.equal((p as InstanceType<typeof Problem>).code, 'agent_already_frozen');
  assert.deepEqual((p as InstanceType<typeof Problem>).extra, { state: { a: 1 } });
});

test('the HTTP thread\'s own writes: a commit or an autocommit write resolves only after the flush, without blocking the loop', async () => {
  const ts = await sqlite.open();
  const flushes: (() => void)[] = [];
  const { openStore } = await import('../../src/store/store.ts');
  const store = openStore({ kind: 'sqlite', file: ts.store.file!, durable: () => new Promise<void>((resolve) => flushes.push(resolve)) });
  // A write that skips its flush fails here at once rather than hanging the test.
  const flushRequested = async (n: number, missing: string) => {
    for (let waited = 0; flushes.length < n; waited += 2) { assert.ok(waited < 5000, missing); await sleep(2); }
  };
  try {
    let done = false;
    const tx = store.transaction(async (trx) => { await trx.insertInto('settings').values({ key: 'f1', value: '1' }).execute(); }).then(() => { done = true; });
    await flushRequested(1, 'the commit asked for no flush');
    assert.equal(done, false, 'committed, not yet flushed: the transaction has not resolved');
    // The loop keeps turning while the flush is awaited, and other connections already see the row.
    const seen = await ts.store.db.selectFrom('settings').select('value').where('key', '=', 'f1').executeTakeFirst();
    assert.equal(seen?.value, '1');
    flushes[0]!();
    await tx;
    let autoDone = false;
    const auto = store.db.insertInto('settings').values({ key: 'f2', value: '2' }).execute().then(() => { autoDone = true; });
    await flushRequested(2, 'the autocommit write asked for no flush');
    assert.equal(autoDone, false, 'an autocommit write waits for its flush too');
    flushes[1]!();
    await auto;
  } finally { await store.close(); await ts.cleanup(); }
});
