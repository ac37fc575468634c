// The README's PostgreSQL test command with a URL that does not answer (a database not yet created,
// say): the runner stops at once and says what it tried, without blaming a variable nobody set.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';

const root = new URL('../../', import.meta.url).pathname;
const runner = (env: Record<string, string | undefined>) =>
  spawnSync(process.execPath, ['scripts/test.ts', 'test/build/no-such.test.ts'], { cwd: root, env: { ...process.env, GAVEL_TEST_REQUIRE_POSTGRES: undefined, ...env }, encoding: 'utf8', timeout: 60_000 });

test('a GAVEL_TEST_DATABASE_URL that does not answer stops the run with its reason and what to do, naming REQUIRE only when it is set', () => {
  const url = 'postgres://postgres@127.0.0.1:1/test';
  const asked = runner({ GAVEL_TEST_DATABASE_URL: url });
  assert.equal(asked.status, 1, asked.stderr);
  assert.match(asked.stderr, /PostgreSQL does not answer at GAVEL_TEST_DATABASE_URL \(postgres:\/\/postgres@127\.0\.0\.1:1\/test\): .*ECONNREFUSED/);
  assert.match(asked.stderr, /createdb/, 'says how to make the database the README names');
  assert.doesNotMatch(asked.stderr, /GAVEL_TEST_REQUIRE_POSTGRES/);
  const required = runner({ GAVEL_TEST_DATABASE_URL: url, GAVEL_TEST_REQUIRE_POSTGRES: '1' });
  assert.equal(required.status, 1, required.stderr);
  assert.match(required.stderr, /PostgreSQL does not answer at GAVEL_TEST_DATABASE_URL/);
});
