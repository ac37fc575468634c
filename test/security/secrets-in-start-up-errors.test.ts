// The password in GAVEL_DATABASE_URL is printed nowhere: not when the database cannot be reached,
// refuses, or the URL or the file holding it is malformed (the CLI's one-line refusals), not by
// `gavel backup`, and not by a running `gavel serve` at trace (its configuration line masks it).
// Nor is a merchant's secret when GAVEL_MERCHANTS_FILE is refused.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { backends } from '../support/backends.ts';
import { MAIN, prepareForChildren, spawnGavel } from '../support/process.ts';
import { merchantsFile } from '../support/merchant.ts';
import { leaksIn } from '../support/secrets.ts';

const PASSWORD = 'db-pass-Wq7xK2vN9mZ4';
const MERCHANT = 'merchant-secret-Hv3pL8tR5y';

test('neither a database URL\'s password nor a merchant\'s secret is printed when the CLI refuses to start or to back up', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gavel-dburl-'));
  try {
    const file = (name: string, text: string) => { const path = join(dir, name); writeFileSync(path, text); return path; };
    const cases: { name: string; argv: string[]; env: Record<string, string> }[] = [
      { name: 'refused', argv: ['migrate'], env: { GAVEL_DATABASE_URL: `postgres://gavel:${PASSWORD}@127.0.0.1:1/gavel` } },
      { name: 'refused at serve', argv: ['serve'], env: { GAVEL_DATABASE_URL: `postgres://gavel:${PASSWORD}@127.0.0.1:1/gavel`, GAVEL_PORT: '0', GAVEL_LOG_LEVEL: 'trace' } },
      { name: 'no such host', argv: ['migrate'], env: { GAVEL_DATABASE_URL: `postgres://gavel:${PASSWORD}@gavel-db.invalid/gavel` } },
      { name: 'not a URL', argv: ['migrate'], env: { GAVEL_DATABASE_URL: `postgres://gavel:${PASSWORD}@[::1:5432/gavel` } },
      { name: 'a bad sslmode', argv: ['migrate'], env: { GAVEL_DATABASE_URL: `postgres://gavel:${PASSWORD}@127.0.0.1:1/gavel?sslmode=sometimes` } },
      { name: 'a password in the query', argv: ['migrate'], env: { GAVEL_DATABASE_URL: `postgres://127.0.0.1:1/gavel?user=gavel&password=${PASSWORD}&sslmode=sometimes` } },
      { name: 'backup of PostgreSQL', argv: ['backup', join(dir, 'copy.db')], env: { GAVEL_DATABASE_URL: `postgres://gavel:${PASSWORD}@127.0.0.1:1/gavel` } },
      { name: 'a config file that breaks after it', argv: ['migrate'], env: { GAVEL_CONFIG: file('broken.json', `{"database_url": "postgres://gavel:${PASSWORD}@127.0.0.1:1/gavel" "port": 1}`) } },
      { name: 'a config file with an unknown key', argv: ['migrate'], env: { GAVEL_CONFIG: file('unknown.json', `{"database_url": "postgres://gavel:${PASSWORD}@127.0.0.1:1/gavel", "databse_url": "postgres://gavel:${PASSWORD}@x/y"}`) } },
      ...[
        `{"merchants":{"acme":{"base_url":"http://127.0.0.1:1/api","secret":"${MERCHANT}" "operations":{}}}}`,
        `{"merchants":{"acme":{"base_url":"http://127.0.0.1:1/api","secret":"${MERCHANT.slice(0, 15)}","operations":{"x":{"method":"POST","path":"/x"}}}}}`,
        `{"merchants":{"acme":{"base_url":"http://acme:${MERCHANT}@127.0.0.1:1/api","secret":"${MERCHANT}","operations":{"x":{"method":"POST","path":"/x"}}}}}`,
        `{"merchants":{"acme":{"base_url":"http://127.0.0.1:1/api","secret":"${MERCHANT}","token":"${MERCHANT}","operations":{"x":{"method":"POST","path":"/x"}}}}}`,
      ].map((text, i) => ({ name: `merchants file ${i}`, argv: ['serve'], env: { GAVEL_MERCHANTS_FILE: file(`merchants-${i}.json`, text), GAVEL_PORT: '0', GAVEL_LOG_LEVEL: 'trace' } })),
    ];
    for (const c of cases) {
      const run = spawnSync(process.execPath, [MAIN, ...c.argv], { env: { ...process.env, GAVEL_DATA_DIR: dir, ...c.env }, encoding: 'utf8', timeout: 60_000 });
      assert.equal(run.status, 2, `${c.name}: ${run.stdout}${run.stderr}`);
      assert.match(run.stderr, /^gavel: /, c.name);
      assert.deepEqual(leaksIn({ [`password (${c.name})`]: PASSWORD, [`merchant secret (${c.name})`]: MERCHANT, [`its first 15 characters (${c.name})`]: MERCHANT.slice(0, 15) }, [run.stdout, run.stderr]), []);
    }
  } finally { rmSync(dir, { recursive: true, force: true }); }
});

for (const backend of backends().filter((b) => b.name === 'postgres')) {
  test('gavel serve at trace prints no part of the database URL\'s password (PostgreSQL; trust authentication ignores it)', async () => {
    const prepared = await prepareForChildren(backend, { merchantsFile: merchantsFile('http://127.0.0.1:1/api') });
    const url = new URL(prepared.env.GAVEL_DATABASE_URL!);
    url.password = PASSWORD;
    const gavel = await spawnGavel({ ...prepared.env, GAVEL_DATABASE_URL: url.toString(), GAVEL_LOG_LEVEL: 'trace' });
    try {
      assert.ok(gavel.lines.some((l) => l.includes('"msg":"configuration"') && l.includes('***')), gavel.lines.join('\n'));
      assert.equal((await fetch(`${gavel.url}/v1/authorize`, { method: 'POST', headers: { ...prepared.key, 'content-type': 'application/json' }, body: '{' })).status, 400);
      await gavel.kill();
      assert.deepEqual(leaksIn({ 'database password': PASSWORD }, gavel.lines), []);
    } finally {
      await gavel.kill('SIGKILL');
      await prepared.svc.ts.cleanup();
    }
  });
}
