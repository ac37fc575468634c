// npm test: type-check, then every test file on SQLite and, when configured, PostgreSQL.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkPostgres } from '../test/support/backends.ts';

const run = (cmd: string, args: string[]) => spawnSync(cmd, args, { stdio: 'inherit', env: process.env });

const pg = await checkPostgres().catch((e: Error) => {
  const given = process.env.GAVEL_TEST_DATABASE_URL;
  if (!given || !URL.canParse(given)) process.stderr.write(`\n${given ? 'GAVEL_TEST_DATABASE_URL is not a URL: ' : ''}${e.message}\n`);
  else {
    // Named as given, its password masked: the database it names may simply not exist yet.
    const url = new URL(given);
    if (url.password) url.password = '***';
    const way = process.env.GAVEL_TEST_REQUIRE_POSTGRES === '1' ? '' : ', or unset GAVEL_TEST_DATABASE_URL to run on SQLite alone';
    process.stderr.write(`\nPostgreSQL does not answer at GAVEL_TEST_DATABASE_URL (${url.toString()}): ${e.message}\n`
      + `Start PostgreSQL and create the database (createdb -h ${url.hostname} -U ${url.username || 'postgres'} ${url.pathname.slice(1)})${way}.\n`);
  }
  process.exit(1);
});
if (pg === 'skipped') {
  process.stderr.write('\n*** PostgreSQL tests SKIPPED: set GAVEL_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test to run them ***\n\n');
}

const tsc = run(process.execPath, ['node_modules/typescript/bin/tsc', '--noEmit', '-p', '.']);
if (tsc.status !== 0) { process.stderr.write('type check failed\n'); process.exit(tsc.status ?? 1); }

const files = process.argv.slice(2);
// The run's temporary files (data directories, key and merchant files the tests make) go in one
// directory of its own, removed when the run ends, so a test that does not clean up, or one killed
// by its timeout, leaves nothing behind on the machine.
const scratch = mkdtempSync(join(tmpdir(), 'gavel-suite-'));
process.env.TMPDIR = scratch;
const result = run(process.execPath, [
  '--test', '--test-concurrency=2', '--test-timeout=300000',
  ...(files.length ? files : ['test/**/*.test.ts']),
]);
try {
  rmSync(scratch, { recursive: true, force: true, maxRetries: 3 });
} catch (e) {
  process.stderr.write(`could not remove the run's temporary directory ${scratch}: ${(e as Error).message}\n`);
}
if (pg === 'skipped') process.stderr.write('\n*** reminder: PostgreSQL tests were SKIPPED ***\n');
process.exit(result.status ?? 1);
