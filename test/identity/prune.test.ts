// Finished rows are deleted so that the identity tables do not grow without bound (every failed
// guess at an unknown name and every sign-in left a row for ever); rows that still decide
// something are kept.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { startService } from '../support/service.ts';
import { pruneIdentityRows, PRUNE_AFTER_MS } from '../../src/services/identity/prune.ts';
import { SESSION_LIFETIMES } from '../../src/domain/access/session-lifetime.ts';
import { consoleMember } from '../support/console.ts';

const HOUR = 3600_000;

for (const backend of backends()) {
  test(`finished throttle counters and sessions are pruned, live ones kept (${backend.name})`, async () => {
    const svc = await startService(backend);
    try {
      const db = svc.deps.store.db;
      const now = new Date();
      const ago = (ms: number) => new Date(now.getTime() - ms).toISOString();
      const ahead = (ms: number) => new Date(now.getTime() + ms).toISOString();
      await db.insertInto('login_throttle').values([
        { key: 'account:stale', failures: 3, window_start: ago(PRUNE_AFTER_MS + HOUR), locked_until: null },
        { key: 'account:stale-lock-over', failures: 9, window_start: ago(PRUNE_AFTER_MS + HOUR), locked_until: ago(PRUNE_AFTER_MS + HOUR / 2) },
        { key: 'account:recent', failures: 2, window_start: ago(10 * 60_000), locked_until: null },
        // Its window began over a day ago, but its lock ended less than a day ago: kept a while longer.
        { key: 'account:lock-over-lately', failures: 9, window_start: ago(PRUNE_AFTER_MS + 10 * 60_000), locked_until: ago(PRUNE_AFTER_MS - 10 * 60_000) },
        // An old window whose lock still runs: it still refuses attempts, so it stays.
        { key: 'account:locked', failures: 40, window_start: ago(PRUNE_AFTER_MS + HOUR), locked_until: ahead(HOUR) },
      ]).execute();
      const { principalId: principal } = await svc.member(['AUDITOR']);
      const session = (id: string, lastSeen: string, expires: string, ended: string | null) =>
        ({ id, token_hash: id.padEnd(64, '0'), principal_id: principal, created_at: ago(2 * PRUNE_AFTER_MS), last_seen_at: lastSeen, expires_at: expires, ended_at: ended, ended_reason: ended ? 'logout' : null });
      await db.insertInto('sessions').values([
        // Signed out a day and five minutes ago, five minutes after its last request: gone for having ended, not for idleness.
        session('ses_ended_long_ago', ago(PRUNE_AFTER_MS + 10 * 60_000), ahead(HOUR), ago(PRUNE_AFTER_MS + 5 * 60_000)),
        session('ses_expired_long_ago', ago(PRUNE_AFTER_MS + 2 * HOUR), ago(PRUNE_AFTER_MS + HOUR), null),
        session('ses_idle_long_ago', ago(PRUNE_AFTER_MS + 2 * HOUR), ahead(HOUR), null),
        session('ses_ended_just_now', ago(60_000), ahead(HOUR), ago(60_000)),
        // Idle a day and ten minutes: its idle lifetime ran out less than a day ago, so it stays a while.
        session('ses_idle_lately', ago(PRUNE_AFTER_MS + 10 * 60_000), ahead(HOUR), null),
        session('ses_live', ago(60_000), ahead(HOUR), null),
      ]).execute();

      assert.deepEqual(await pruneIdentityRows(svc.deps.store, now), { throttle: 2, sessions: 3, more: false });
      const keys = (await db.selectFrom('login_throttle').select('key').where('key', 'like', 'account:%').orderBy('key').execute()).map((r) => r.key);
      assert.deepEqual(keys, ['account:lock-over-lately', 'account:locked', 'account:recent']);
      const ids = (await db.selectFrom('sessions').select('id').where('principal_id', '=', principal).orderBy('id').execute()).map((r) => r.id);
      assert.deepEqual(ids, ['ses_ended_just_now', 'ses_idle_lately', 'ses_live']);
      // Nothing left to prune: a second run deletes nothing.
      assert.deepEqual(await pruneIdentityRows(svc.deps.store, now), { throttle: 0, sessions: 0, more: false });
    } finally { await svc.stop(); }
  });
}

for (const backend of backends()) {
  test(`a run deletes a bounded number of rows per table; the next run takes what it left (${backend.name})`, async () => {
    const svc = await startService(backend);
    try {
      const db = svc.deps.store.db;
      const now = new Date();
      const old = new Date(now.getTime() - PRUNE_AFTER_MS - HOUR).toISOString();
      await db.insertInto('login_throttle').values(Array.from({ length: 7 }, (_, i) => ({ key: `account:guess-${i}`, failures: 1, window_start: old, locked_until: null }))).execute();
      const limits = { batch: 2, maxBatches: 3 };
      assert.deepEqual(await pruneIdentityRows(svc.deps.store, now, limits), { throttle: 6, sessions: 0, more: true });
      assert.deepEqual(await pruneIdentityRows(svc.deps.store, now, limits), { throttle: 1, sessions: 0, more: false });
      assert.equal((await db.selectFrom('login_throttle').select('key').where('key', 'like', 'account:guess-%').execute()).length, 0);
    } finally { await svc.stop(); }
  });

  test(`two instances pruning at once share the rows out, each deleted once (${backend.name})`, async () => {
    const svc = await startService(backend);
    const other = svc.ts.reopen();
    try {
      const db = svc.deps.store.db;
      const now = new Date();
      const old = new Date(now.getTime() - PRUNE_AFTER_MS - HOUR).toISOString();
      await db.insertInto('login_throttle').values(Array.from({ length: 400 }, (_, i) => ({ key: `address:10.0.${i >> 8}.${i & 255}`, failures: 1, window_start: old, locked_until: null }))).execute();
      const limits = { batch: 10, maxBatches: 100 };
      const [a, b] = await Promise.all([pruneIdentityRows(svc.deps.store, now, limits), pruneIdentityRows(other, now, limits)]);
      assert.equal(a.throttle + b.throttle, 400);
      assert.equal((await db.selectFrom('login_throttle').select('key').where('key', 'like', 'address:10.0.%').execute()).length, 0);
    } finally { await svc.stop(); }
  });

  test(`the service prunes by its own clock: a session and counters are kept inside their window and deleted after it (${backend.name})`, async () => {
    let offset = 0;
    const svc = await startService(backend, {}, undefined, { clock: { now: () => new Date(Date.now() + offset) } });
    try {
      const db = svc.deps.store.db;
      const person = await consoleMember(svc, ['AUDITOR']);
      const guess = await svc.app.inject({ method: 'POST', url: '/v1/console/login', payload: { name: 'nobody-here', password: 'not the password' } });
      assert.equal(guess.statusCode, 401);
      const counters = () => db.selectFrom('login_throttle').select('key').where('key', '=', 'account:nobody-here').execute();
      const sessions = () => db.selectFrom('sessions').select('id').where('principal_id', '=', person.principalId).execute();
      assert.equal((await counters()).length, 1);
      assert.equal((await sessions()).length, 1);

      offset = PRUNE_AFTER_MS - 10 * 60_000; // inside every window: nothing goes
      await svc.identityPruning.run();
      assert.equal((await counters()).length, 1);
      assert.equal((await sessions()).length, 1);

      offset = PRUNE_AFTER_MS + 10 * 60_000; // the counter's day has passed; the idle session's day plus idle lifetime has not
      await svc.identityPruning.run();
      assert.equal((await counters()).length, 0);
      assert.equal((await sessions()).length, 1);

      offset = PRUNE_AFTER_MS + SESSION_LIFETIMES.idleMs + 10 * 60_000;
      await svc.identityPruning.run();
      assert.equal((await sessions()).length, 0);
    } finally { await svc.stop(); }
  });
}
