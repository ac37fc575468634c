// The shell walk-throughs of the README and docs/*.md, read as the docs tests check them: their code
// blocks, the curl calls in them (method and route), and what the shell then reads from each answer
// with jq. The reading is textual and made for the docs' own style: `$G` is the base URL, variables
// are upper case, and an answer is read by a jq in the same command, from a variable it was assigned
// to (`echo "$EXEC" | jq …`) or from a file it was saved in (`> proof.json`, `jq … proof.json`).
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The README and docs/*.md but for performance.md (measurements, not walk-throughs). */
export const walkthroughPages = (): string[] =>
  ['README.md', ...readdirSync('docs').filter((f) => f.endsWith('.md') && f !== 'performance.md').map((f) => join('docs', f))];

/** Each fenced code block of `page`, without its fences. */
export const codeBlocks = (page: string): string[] =>
  [...readFileSync(page, 'utf8').matchAll(/^```\w*\n([\s\S]*?)^```/gm)].map((m) => m[1]!);

export interface CurlCall {
  /** `POST /v1/console/login`, variables and command substitutions in the path as `{}`. */
  route: string;
  /** The variable the call's answer is assigned to (`EXEC=$(curl …`), if any. */
  assignedTo?: string;
  /** The file the answer is saved in (`curl … > proof.json`), if any. */
  savedIn?: string;
  /** The jq filter piped the answer (`curl … | jq -r .secret`), if any. */
  piped?: string;
  /**
   * The body it sends (`-d '…'`, `-d "…"` or `-d "$BODY"` with BODY="…" earlier in the block), as the
   * shell would pass it but with each variable and command substitution read as `1`, which keeps a
   * JSON body JSON whether it stood in a string or for a number.
   */
  body?: string;
}

// Each curl up to its URL: the method is -X's, else POST with -d, else GET.
const CURL = /curl ((?:(?!curl )[\s\S])*?)\$G(\/v1\/(?:\$\([^)]*\)|\$[A-Z_]+|[^\s"';)?$])*)(.*)/g;
/** A jq filter: quoted, or a word up to the end of its command substitution. */
const FILTER = String.raw`('[^']*'|[^\s'")|]+)`;
const JQ_PIPE = new RegExp(String.raw`\|\s*jq(?:\s+-[a-z]+)*\s+${FILTER}`);

export function curlCalls(block: string): CurlCall[] {
  return [...block.matchAll(CURL)].map((m) => {
    const options = m[1]! + m[3]!;
    const method = /-X (\w+)/.exec(options)?.[1] ?? (/(^|\s)-d /.test(options) ? 'POST' : 'GET');
    const lineStart = block.lastIndexOf('\n', m.index) + 1;
    const assignedTo = /\b([A-Z_]+)=\$\($/.exec(block.slice(lineStart, m.index))?.[1];
    // What follows the URL on its line, without the command substitutions of its query string (a jq
    // there reads another answer, as `to=$(echo "$LOG" | jq …)` does).
    const after = m[3]!.replace(/\$\([^)]*\)/g, '');
    const savedIn = /^[^|]*>\s*([\w.-]+\.json)\b/.exec(after)?.[1];
    const piped = JQ_PIPE.exec(after)?.[1];
    return { route: `${method} ${m[2]!.replace(/\$\([^)]*\)|\$[A-Z_]+/g, '{}')}`, assignedTo, savedIn, piped, body: dataArgument(block, m.index, m.index + m[0].length) };
  });
}

/**
 * The argument of the `-d` that starts between `from` and `to` (a curl up to the end of its URL's
 * line), read as curlCalls' `body` says; the argument itself may run on over lines.
 */
function dataArgument(block: string, from: number, to: number): string | undefined {
  const m = /(?:^|\s)-d\s+(['"])/.exec(block.slice(from, to));
  if (!m) return undefined;
  const start = from + m.index + m[0].length;
  if (m[1] === "'") return block.slice(start, block.indexOf("'", start));
  const whole = /^\$([A-Z_]+)"/.exec(block.slice(start));
  if (whole) {
    const assigned = new RegExp(`\\b${whole[1]}="`).exec(block);
    return assigned ? doubleQuoted(block, assigned.index + assigned[0].length) : undefined;
  }
  return doubleQuoted(block, start);
}

/** A double-quoted shell word from `start` (just past its quote) to its closing quote, substitutions read as `1`. */
function doubleQuoted(text: string, start: number): string {
  let out = '';
  for (let i = start; i < text.length; i++) {
    const c = text[i]!;
    if (c === '"') break;
    if (c === '\\' && '"\\$`'.includes(text[i + 1]!)) { out += text[++i]; continue; }
    if (c === '$' && text[i + 1] === '(') {
      let depth = 0;
      for (i++; i < text.length; i++) {
        if (text[i] === '(') depth++;
        else if (text[i] === ')' && --depth === 0) break;
      }
      out += '1';
      continue;
    }
    const variable = /^\$[A-Za-z_]\w*/.exec(text.slice(i));
    if (variable) { out += '1'; i += variable[0].length - 1; continue; }
    out += c;
  }
  return out;
}

/** The jq filters a block applies to a variable (`echo "$NAME" | jq …`) or to a file (`jq … file.json`). */
export function laterReads(block: string): { variable?: string; file?: string; filter: string }[] {
  const fromVariable = [...block.matchAll(new RegExp(String.raw`echo "\$([A-Z_]+)" \| jq(?:\s+-[a-z]+)*\s+${FILTER}`, 'g'))]
    .map((m) => ({ variable: m[1]!, filter: m[2]! }));
  const fromFile = [...block.matchAll(new RegExp(String.raw`(?:^|[;&|(]\s*)jq(?:\s+-[a-z]+)*\s+${FILTER}\s+([\w.-]+\.json)\b`, 'gm'))]
    .map((m) => ({ file: m[2]!, filter: m[1]! }));
  return [...fromVariable, ...fromFile];
}

/**
 * The member paths a jq filter reads, each a list of member names and array indexes (`number`):
 * `.projects[0].id` is ['projects', 0, 'id'], and an object construction's shorthand `{witnessed}`
 * is ['witnessed'].
 */
export function filterPaths(filter: string): (string | number)[][] {
  const text = filter.replace(/^'|'$/g, '');
  const paths = [...text.matchAll(/(?<![\w\]])((?:\.[a-z_]\w*(?:\[\d+\])*)+)/g)].map((m) =>
    [...m[1]!.matchAll(/\.([a-z_]\w*)|\[(\d+)\]/g)].map((s) => s[1] ?? Number(s[2])));
  const shorthand = [...text.matchAll(/[{,]\s*([a-z_]\w*)\s*(?=[,}])/g)].map((m) => [m[1]!]);
  return [...paths, ...shorthand];
}
