// CI (.ci/run): a fresh PostgreSQL server holds no database "test". Creates the one
// GAVEL_TEST_DATABASE_URL names when it is missing, through the server's "postgres" database.
// A server that does not answer is left to the test runner, which stops the run saying why.
import pg from 'pg';

const given = process.env.GAVEL_TEST_DATABASE_URL;
if (!given || !URL.canParse(given)) process.exit(0);
const url = new URL(given);
const name = decodeURIComponent(url.pathname.slice(1));
url.pathname = '/postgres';
const client = new pg.Client({ connectionString: url.toString(), connectionTimeoutMillis: 5000 });
try {
  await client.connect();
} catch {
  process.exit(0);
}
try {
  const { rowCount } = await client.query('select 1 from pg_database where datname = $1', [name]);
  if (!rowCount) {
    await client.query(`create database "${name.replaceAll('"', '""')}"`);
    process.stderr.write(`created the test database "${name}"\n`);
  }
} catch (e) {
  // 42P04: another run created it meanwhile.
  if ((e as { code?: string }).code !== '42P04') throw e;
} finally {
  await client.end();
}
