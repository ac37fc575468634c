// BatchedStatement (store/batched-statement.ts): rows submitted in one turn share one statement,
// within the row and in-flight bounds, and a failing statement fails only the rows that fail alone.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BatchedStatement } from '../../src/store/batched-statement.ts';

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A statement that records the rows of each run and answers each row doubled, or fails as told. */
function recording(fail: (rows: readonly number[]) => boolean = () => false) {
  const runs: number[][] = [];
  const run = async (rows: readonly number[]) => {
    runs.push([...rows]);
    await turn();
    if (fail(rows)) throw new Error(`failed: ${rows.join(',')}`);
    return rows.map((r) => r * 2);
  };
  return { runs, run };
}

test('rows submitted in the same turn share one statement; each caller gets its own result', async () => {
  const { runs, run } = recording();
  const statement = new BatchedStatement(run);
  const results = await Promise.all([1, 2, 3, 4, 5].map((r) => statement.submit(r)));
  assert.deepEqual(results, [2, 4, 6, 8, 10]);
  assert.deepEqual(runs, [[1, 2, 3, 4, 5]]);
  assert.equal(statement.statements, 1);
});

test('a lone row leaves at the end of its turn, without waiting for company', async () => {
  const { runs, run } = recording();
  const statement = new BatchedStatement(run);
  assert.equal(await statement.submit(7), 14);
  assert.equal(await statement.submit(8), 16);
  assert.deepEqual(runs, [[7], [8]]);
});

test('no statement holds more than maxRows rows', async () => {
  const { runs, run } = recording();
  const statement = new BatchedStatement(run, { maxRows: 4, maxInFlight: 10 });
  const rows = Array.from({ length: 10 }, (_, i) => i);
  assert.deepEqual(await Promise.all(rows.map((r) => statement.submit(r))), rows.map((r) => r * 2));
  assert.deepEqual(runs, [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]);
});

test('past maxInFlight statements, rows wait and leave together when one returns', async () => {
  let open = 0;
  let most = 0;
  const runs: number[][] = [];
  const gates: (() => void)[] = [];
  const statement = new BatchedStatement(async (rows: readonly number[]) => {
    runs.push([...rows]);
    most = Math.max(most, ++open);
    await new Promise<void>((resolve) => gates.push(resolve));
    open--;
    return [...rows];
  }, { maxRows: 2, maxInFlight: 2 });
  const first = [1, 2, 3, 4].map((r) => statement.submit(r));
  await turn();
  assert.deepEqual(runs, [[1, 2], [3, 4]], 'two statements in flight');
  const later = [5, 6, 7].map((r) => statement.submit(r));
  await turn();
  assert.equal(runs.length, 2, 'the later rows wait while two statements are in flight');
  gates.shift()!();
  await turn();
  assert.deepEqual(runs[2], [5, 6], 'when one returns, waiting rows leave (up to maxRows)');
  for (let i = 0; i < 20 && (gates.length > 0 || runs.length < 4); i++) { gates.shift()?.(); await turn(); }
  assert.deepEqual(await Promise.all([...first, ...later]), [1, 2, 3, 4, 5, 6, 7]);
  assert.equal(most, 2);
});

test('a statement that fails is run again row by row: only a row that fails alone fails its caller', async () => {
  const { runs, run } = recording((rows) => rows.includes(3));
  const statement = new BatchedStatement(run);
  const outcomes = await Promise.allSettled([1, 2, 3, 4].map((r) => statement.submit(r)));
  assert.deepEqual(outcomes.map((o) => o.status), ['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
  assert.deepEqual(outcomes.filter((o) => o.status === 'fulfilled').map((o) => o.value), [2, 4, 8]);
  assert.match(String((outcomes[2] as PromiseRejectedResult).reason), /failed: 3/);
  assert.deepEqual(runs, [[1, 2, 3, 4], [1], [2], [3], [4]]);
});

test('a statement whose connection was lost fails every caller with that loss and is not run again (it may have committed)', async () => {
  const runs: number[][] = [];
  let committed = false;
  const statement = new BatchedStatement(async (rows: readonly number[]) => {
    runs.push([...rows]);
    await turn();
    // The first statement commits, then its answer is lost; a rerun meets the rows it wrote.
    if (committed) throw Object.assign(new Error('duplicate key value violates unique constraint'), { code: '23505' });
    committed = true;
    throw Object.assign(new Error('Connection terminated unexpectedly'), {});
  });
  const outcomes = await Promise.allSettled([1, 2, 3].map((r) => statement.submit(r)));
  assert.ok(outcomes.every((o) => o.status === 'rejected' && /Connection terminated/.test(String(o.reason))), 'each caller hears of the lost connection (503), not of a conflict (500)');
  assert.deepEqual(runs, [[1, 2, 3]]);
});

test('a statement answering for a different number of rows fails every caller and is not run again', async () => {
  let calls = 0;
  const statement = new BatchedStatement(async (rows: readonly number[]) => { calls++; return rows.slice(1); });
  const outcomes = await Promise.allSettled([1, 2, 3].map((r) => statement.submit(r)));
  assert.ok(outcomes.every((o) => o.status === 'rejected' && /answered 2 results for 3 rows/.test(String(o.reason))));
  assert.equal(calls, 1, 'what it wrote stays written: rerunning the rows could write them twice');
});

test('a row submitted once the last statement has returned leaves at the end of its own turn', async () => {
  const { runs, run } = recording();
  const statement = new BatchedStatement(run);
  assert.equal(await statement.submit(7), 14);
  await turn(); // nothing in flight, nothing scheduled: only the new submit can start a statement
  const later = statement.submit(8);
  await turn();
  assert.deepEqual(runs, [[7], [8]]);
  assert.equal(await later, 16);
});

test('by default, statements of up to 128 rows, four in flight at once', async () => {
  const runs: number[] = [];
  const gates: (() => void)[] = [];
  const statement = new BatchedStatement(async (rows: readonly number[]) => {
    runs.push(rows.length);
    await new Promise<void>((resolve) => gates.push(resolve));
    return [...rows];
  });
  const all = Array.from({ length: 128 * 5 }, (_, i) => statement.submit(i));
  await turn();
  assert.deepEqual(runs, [128, 128, 128, 128]);
  while (gates.length > 0) { gates.shift()!(); await turn(); }
  assert.equal((await Promise.all(all)).length, 128 * 5);
  assert.deepEqual(runs, [128, 128, 128, 128, 128]);
});
