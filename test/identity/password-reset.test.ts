// A password reset (`gavel reset-password`, services/identity/password-reset.ts) racing a login of
// the same person: a login that verified the old password gets no session once the reset has
// committed, and on PostgreSQL one that checks while the reset is still open waits for it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { consoleMember } from '../support/console.ts';
import { holdTable } from '../support/hold-table.ts';
import { startService } from '../support/service.ts';
import { login } from '../../src/services/identity/login.ts';
import { resetPassword } from '../../src/services/identity/password-reset.ts';
import type { Store } from '../../src/store/store.ts';

const liveSessions = (store: Store, principalId: string) =>
  store.db.selectFrom('sessions').select('id').where('principal_id', '=', principalId).where('ended_at', 'is', null).execute();

for (const backend of backends()) {
  test(`${backend.name}: a login that verified the old password before a reset committed gets no session`, async () => {
    const svc = await startService(backend);
    try {
      const person = await consoleMember(svc, ['AUDITOR']);
      const store = svc.ts.store;
      // login takes its attempt in one transaction, verifies, then makes the session in a second:
      // the reset commits just before that second one begins.
      let transactions = 0;
      const racing: Store = {
        ...store,
        transaction: async (fn) => {
          if (++transactions === 2) await resetPassword(store, person.name, new Date());
          return store.transaction(fn);
        },
      };
      const result = await login(racing, { name: person.name, password: person.password, address: '127.0.0.1' }, new Date());
      assert.equal(transactions, 2);
      assert.deepEqual(result, { ok: false, reason: 'invalid_credentials' });
      assert.deepEqual(await liveSessions(store, person.principalId), []);
    } finally { await svc.stop(); }
  });
}

const postgres = backends().find((b) => b.name === 'postgres');
test('postgres: a reset that begins while a login is making its session waits for it, then ends that session too', { skip: !postgres && 'GAVEL_TEST_DATABASE_URL is not set' }, async () => {
  const svc = await startService(postgres!);
  try {
    const person = await consoleMember(svc, ['AUDITOR']);
    const store = svc.ts.store;
    const url = process.env.GAVEL_TEST_DATABASE_URL!;
    const schema = (svc.ts.options as { schema: string }).schema;
    // The login's session transaction stops at its throttle write, past its check of the hash.
    let held: Awaited<ReturnType<typeof holdTable>> | undefined;
    let transactions = 0;
    const racing: Store = {
      ...store,
      transaction: async (fn) => {
        if (++transactions === 2) held = await holdTable(url, schema, 'login_throttle', 'exclusive');
        return store.transaction(fn);
      },
    };
    try {
      const signIn = login(racing, { name: person.name, password: person.password, address: '127.0.0.1' }, new Date());
      while (!held) await new Promise((resolve) => setImmediate(resolve));
      await held.reached('delete from "login_throttle"%');
      const reset = resetPassword(store, person.name, new Date());
      await held.reached('%', { statements: 2, unless: reset });
      await held.release();
      const [result] = await Promise.all([signIn, reset]);
      assert.equal(result.ok, true, 'the login committed first');
      assert.deepEqual(await liveSessions(store, person.principalId), [], 'and the reset ended its session');
    } finally { await held?.release(); }
  } finally { await svc.stop(); }
});
