// npm test: type-check, then every test file on SQLite and, when configured, PostgreSQL.
import { spawnSync } from 'node:child_process';
import { checkPostgres } from '../test/support/backends.ts';

const run = (cmd: string, args: string[]) => spawnSync(cmd, args, { stdio: 'inherit', env: process.env });

const pg = await checkPostgres().catch((e: Error) => {
  process.stderr.write(`\nPostgreSQL is required (GAVEL_TEST_REQUIRE_POSTGRES=1) but does not answer at GAVEL_TEST_DATABASE_URL: ${e.message}\n`);
  process.exit(1);
});
if (pg === 'skipped') {
  process.stderr.write('\n*** PostgreSQL tests SKIPPED: set GAVEL_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test to run them ***\n\n');
}

const tsc = run(process.execPath, ['node_modules/typescript/bin/tsc', '--noEmit', '-p', '.']);
if (tsc.status !== 0) { process.stderr.write('type check failed\n'); process.exit(tsc.status ?? 1); }

const files = process.argv.slice(2);
const result = run(process.execPath, [
  '--test', '--test-concurrency=2', '--test-timeout=300000',
  ...(files.length ? files : ['test/**/*.test.ts']),
]);
if (pg === 'skipped') process.stderr.write('\n*** reminder: PostgreSQL tests were SKIPPED ***\n');
process.exit(result.status ?? 1);
