// npm run build (also run by `npm ci` and before every `npm start`): src/**/*.ts → dist/**/*.js.
// The service runs as JavaScript so that no process of it loads Node's TypeScript stripper, a
// WebAssembly module that cost each of its two isolates about 13 MB (decision 0021). Types are
// erased with the same stripper Node would run at load time, in its whitespace mode, so every line
// and column of dist is the line and column of src: stack traces need no source map. Relative
// specifiers are the one rewrite: './x.ts' becomes './x.js'.
import { stripTypeScriptTypes } from 'node:module';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

/** A relative module specifier ending in .ts, as an import, export, dynamic import or `new URL(…)` names it. */
const SPECIFIER = /((?:\bfrom|\bimport|\bimport\s*\(|\bnew URL\s*\()\s*)(['"])(\.\.?\/[^'"\n]*)\.ts\2/g;
/** Any quoted relative path ending in .ts left afterwards: a form the rewrite does not know. */
const LEFTOVER = /(['"])\.\.?\/[^'"\n]*\.ts\1/;

/** Strips one module's types and points its relative specifiers at the built files. */
export function buildModule(source: string, file = '<module>'): string {
  const js = stripTypeScriptTypes(source, { mode: 'strip' }).replace(SPECIFIER, '$1$2$3.js$2');
  const left = LEFTOVER.exec(js);
  if (left) throw new Error(`${file}: ${left[0]} is a .ts path in a form the build does not rewrite`);
  return js;
}

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => join(e.parentPath, e.name));
}

/** Builds `srcDir` into `outDir`, replacing it whole (written beside it, then swapped in). */
export function build(srcDir: string, outDir: string): number {
  const staging = `${outDir}.building-${process.pid}`;
  rmSync(staging, { recursive: true, force: true });
  const files = sources(srcDir);
  try {
    for (const file of files) {
      const out = join(staging, relative(srcDir, file)).replace(/\.ts$/, '.js');
      mkdirSync(dirname(out), { recursive: true });
      const source = readFileSync(file, 'utf8');
      writeFileSync(out, buildModule(source, relative(srcDir, file)));
      if (source.startsWith('#!')) chmodSync(out, 0o755);
    }
  } catch (error) {
    // A failed build leaves the previous tree as it was, and nothing half written beside it.
    rmSync(staging, { recursive: true, force: true });
    throw error;
  }
  // Two renames, so a process starting meanwhile finds a whole tree, old or new, almost always.
  const old = `${outDir}.old-${process.pid}`;
  if (existsSync(outDir)) renameSync(outDir, old);
  renameSync(staging, outDir);
  rmSync(old, { recursive: true, force: true });
  return files.length;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const root = fileURLToPath(new URL('..', import.meta.url));
  const n = build(join(root, 'src'), join(root, 'dist'));
  process.stderr.write(`built ${n} modules into dist/\n`);
}
