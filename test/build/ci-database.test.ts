// .ci/run on a fresh machine: its PostgreSQL has no database "test" yet, and CI creates the one
// GAVEL_TEST_DATABASE_URL names before the suite runs (run twice, the second finds it and is quiet).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import pg from 'pg';

const root = new URL('../../', import.meta.url).pathname;
const given = process.env.GAVEL_TEST_DATABASE_URL;

test('.ci/run creates the PostgreSQL test database when it is missing', { skip: !given && 'no GAVEL_TEST_DATABASE_URL' }, async () => {
  const ci = readFileSync(`${root}.ci/run`, 'utf8');
  const ensure = ci.indexOf('\nnode scripts/ensure-test-database.ts\n');
  assert.ok(ensure !== -1 && ensure < ci.indexOf('\nnpm test'), ci);
  const name = `gavel_ci_${randomBytes(5).toString('hex')}`;
  const url = new URL(given!);
  url.pathname = `/${name}`;
  const run = () => spawnSync(process.execPath, ['scripts/ensure-test-database.ts'], { cwd: root, env: { ...process.env, GAVEL_TEST_DATABASE_URL: url.toString() }, encoding: 'utf8', timeout: 60_000 });
  const admin = new pg.Client({ connectionString: given });
  await admin.connect();
  try {
    const first = run();
    assert.equal(first.status, 0, first.stderr);
    assert.match(first.stderr, new RegExp(`created the test database "${name}"`));
    const { rowCount } = await admin.query('select 1 from pg_database where datname = $1', [name]);
    assert.equal(rowCount, 1);
    const second = run();
    assert.equal(second.status, 0, second.stderr);
    assert.equal(second.stderr, '');
  } finally {
    await admin.query(`drop database if exists ${name}`);
    await admin.end();
  }
});
