// The domain core is pure (docs/architecture.md): every module src/domain reaches, itself or through
// the src/lib helpers it imports, stays inside src/domain and src/lib, imports no adapter (http,
// store, services, node:fs, node:net's sockets...) and reads no clock; time and randomness come in
// as arguments.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/** Outside modules a pure module may import, each with the names it may take from it. */
const ALLOWED: Record<string, ReadonlySet<string>> = {
  'node:crypto': new Set(['createHash', 'hash', 'createPublicKey', 'verify', 'KeyObject']), // hashing, verification
  'node:net': new Set(['isIP']), // parsing an address, no socket
  canonicalize: new Set(['default']), // RFC 8785
};
/** A port's interface, imported as a type alone (erased): the caller passes the adapter in. */
const PORTS = new Set(['src/signer/signer.ts']);
const IMPURE = [
  [/\bDate\.now\s*\(/, 'Date.now()'], [/\bnew Date\s*\(\s*\)/, 'new Date()'], [/\bperformance\./, 'performance'],
  [/\bprocess\./, 'process'], [/\bMath\.random\b/, 'Math.random'], [/\bset(?:Timeout|Interval|Immediate)\s*\(/, 'a timer'],
  [/\b(?:require|import)\s*\(/, 'a dynamic import'], [/\bfetch\s*\(/, 'fetch'],
] as const;

const filesUnder = (dir: string): string[] => readdirSync(dir, { withFileTypes: true })
  .flatMap((e) => e.isDirectory() ? filesUnder(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : []);
const withoutComments = (code: string) => code.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`\\])\/\/.*$/gm, '$1');

/** The names an import clause takes: `default`, `*`, or each named one. */
function namesOf(clause: string): string[] {
  const names = [...(/\{([^}]*)\}/.exec(clause)?.[1] ?? '').matchAll(/(?:^|,)\s*(?:type\s+)?([\w$]+)/g)].map((n) => n[1]!);
  const head = clause.replace(/\{[^}]*\}/, '').trim();
  if (/^\*/.test(head)) names.push('*');
  else if (/^[\w$]/.test(head)) names.push('default');
  return names;
}

/** Each import or re-export: its specifier, whether it is type-only, and the names it takes. */
function importsOf(code: string) {
  return [...code.matchAll(/^\s*(?:import|export)\s+(type\s+)?([^;]*?)\s*from\s*'([^']+)'/gm)].map((m) => ({
    spec: m[3]!,
    typeOnly: Boolean(m[1]) || /^\{\s*type\s+[\w$]+(?:\s*,\s*type\s+[\w$]+)*\s*,?\s*\}$/.test(m[2]!.trim()),
    names: namesOf(m[2]!),
  })).concat([...code.matchAll(/^\s*import\s+'([^']+)'/gm)].map((m) => ({ spec: m[1]!, typeOnly: false, names: ['(side effects)'] })));
}

test('src/domain and the helpers it reaches do no I/O, read no clock and import no adapter', () => {
  const problems: string[] = [];
  const seen = new Set<string>();
  const queue = filesUnder('src/domain');
  assert.ok(queue.length >= 60, 'the walk finds the domain files');
  while (queue.length) {
    const file = queue.shift()!;
    if (seen.has(file)) continue;
    seen.add(file);
    const code = withoutComments(readFileSync(file, 'utf8'));
    for (const [pattern, what] of IMPURE) if (pattern.test(code)) problems.push(`${file}: ${what}`);
    for (const { spec, typeOnly, names } of importsOf(code)) {
      if (spec.startsWith('.')) {
        const target = relative('.', resolve(dirname(file), spec));
        if (typeOnly && PORTS.has(target)) continue;
        if (!/^src\/(domain|lib)\//.test(target)) problems.push(`${file}: imports ${target}`);
        else queue.push(target);
      } else {
        const allowed = ALLOWED[spec];
        const refused = allowed ? names.filter((n) => !allowed.has(n)) : [];
        if (!allowed) problems.push(`${file}: imports ${spec}`);
        else if (refused.length) problems.push(`${file}: imports ${refused.join(', ')} from ${spec}`);
      }
    }
  }
  assert.deepEqual(problems, []);
});
