// The service runs as built JavaScript (decision 0021, scripts/build.ts): types erased in place,
// relative .ts specifiers pointed at .js, and a built server that decides, with its writer thread
// and migrations, under a node that refuses to load TypeScript at all.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build, buildModule } from '../../scripts/build.ts';
import { backends } from '../support/backends.ts';
import { prepareForChildren, spawnGavel } from '../support/process.ts';
import { gavelNodeArgs } from '../../bench/lib/harness.ts';

const root = new URL('../../', import.meta.url).pathname;

test('buildModule erases types in place and rewrites every relative .ts specifier', () => {
  const source = [
    "import { a, type B } from './a.ts';",
    "import type { C } from '../c.ts';",
    "export * from \"./d/e.ts\";",
    "import './side.ts';",
    "const f = async (x: number): Promise<B> => (await import('./lazy.ts')).g(x) as B;",
    "const w = new URL('./worker.ts', import.meta.url);",
    "import { readFileSync } from 'node:fs';",
    "const pattern = /\\.ts$/; // not a specifier",
  ].join('\n');
  const js = buildModule(source);
  const lines = js.split('\n');
  assert.equal(lines.length, 8, 'every line stays on its line');
  assert.equal(lines[0], "import { a,        } from './a.js';");
  assert.equal(lines[1]!.trim(), '', 'a type-only import is erased');
  assert.equal(lines[2], 'export * from "./d/e.js";');
  assert.equal(lines[3], "import './side.js';");
  assert.match(lines[4]!, /await import\('\.\/lazy\.js'\)/);
  assert.doesNotMatch(lines[4]!, /number|Promise<B>|as B/);
  assert.equal(lines[4]!.indexOf('import('), source.split('\n')[4]!.indexOf('import('), 'columns are kept');
  assert.equal(lines[5], "const w = new URL('./worker.js', import.meta.url);");
  assert.equal(lines[6], "import { readFileSync } from 'node:fs';");
  assert.equal(lines[7], source.split('\n')[7]);
  assert.throws(() => buildModule("const file = './somewhere.ts';", 'x.ts'), /x\.ts: '\.\/somewhere\.ts' is a \.ts path/);
});

test('the built service decides under a node that cannot load TypeScript', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gavel-build-'));
  const backend = backends()[0]!;
  const { agent, jws, key, env, svc } = await prepareForChildren(backend);
  try {
    // As in the checkout: dist beside node_modules, under a package of type module.
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
    symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
    const n = build(join(root, 'src'), join(dir, 'dist'));
    const built = readdirSync(join(dir, 'dist'), { recursive: true, withFileTypes: true }).filter((e) => e.isFile());
    assert.equal(built.length, n);
    assert.ok(built.every((e) => e.name.endsWith('.js')), 'only JavaScript is built');
    assert.match(readFileSync(join(dir, 'dist/cli/main.js'), 'utf8').split('\n')[0]!, /^#!\/usr\/bin\/env -S node /, 'the shebang is kept');

    const gavel = await spawnGavel(env, { main: join(dir, 'dist/cli/main.js'), nodeArgs: [...gavelNodeArgs(), '--no-experimental-strip-types'] });
    try {
      const res = await fetch(`${gavel.url}/v1/authorize`, {
        method: 'POST', headers: { ...key, 'content-type': 'application/json' },
        body: JSON.stringify({ agent: agent.did, permit: jws, action: 'read', resource: 'resource://docs/a' }),
      });
      const body = await res.json() as { decision: string; audit_id: string };
      assert.equal(res.status, 200);
      assert.equal(body.decision, 'ALLOW');
      assert.ok(body.audit_id);
    } finally { await gavel.kill(); }
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await svc.ts.cleanup();
  }
});

test('npm ci, npm start, npm run serve and npm run migrate build before they run the built entry', () => {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string>; bin: Record<string, string> };
  const s = pkg.scripts;
  assert.match(s.build!, /scripts\/build\.ts$/);
  assert.match(s.prepare!, /scripts\/build\.ts$/, 'npm ci builds (prepare)');
  for (const name of ['start', 'serve', 'migrate']) {
    assert.match(s[name]!, /\bdist\/cli\/main\.js\b/, name);
    assert.equal(s[`pre${name}`], 'npm run --silent build', `pre${name}`);
  }
  assert.equal(pkg.bin.gavel, './dist/cli/main.js');
});

test('a build that fails leaves the previous tree as it was and nothing half written', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gavel-build-fail-'));
  try {
    writeFileSync(join(dir, 'good.ts'), "export const a: number = 1;\n");
    const n = build(dir, join(dir, 'out'));
    assert.equal(n, 1);
    writeFileSync(join(dir, 'bad.ts'), "export const f = './elsewhere.ts';\n");
    assert.throws(() => build(dir, join(dir, 'out')), /bad\.ts: '\.\/elsewhere\.ts'/);
    assert.deepEqual(readdirSync(join(dir, 'out')), ['good.js'], 'the previous build stands');
    assert.deepEqual(readdirSync(dir).filter((f) => f.startsWith('out.')), [], 'no staging tree is left');
  } finally { rmSync(dir, { recursive: true, force: true }); }
});

test('the built migrator applies every built migration to a new database', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gavel-build-'));
  try {
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
    symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
    build(join(root, 'src'), join(dir, 'dist'));
    const { openStore } = await import(join(dir, 'dist/store/store.js'));
    const { migrateToLatest } = await import(join(dir, 'dist/store/migrate.js'));
    const store = openStore({ kind: 'sqlite', file: join(dir, 'gavel.db') });
    try {
      const applied: string[] = await migrateToLatest(store);
      const sources = readdirSync(join(root, 'src/store/migrations')).filter((f) => /^\d{4}_.*\.ts$/.test(f)).map((f) => f.slice(0, -3)).sort();
      assert.deepEqual(applied, sources);
    } finally { await store.close(); }
  } finally { rmSync(dir, { recursive: true, force: true }); }
});
