// JSON.parse, exact where V8's is not. V8 (13.6 in Node 24, and 14.6) can read a member name
// written with an escape as another name it parsed before: after `{"\\": 0}`, `{"\"": 1}` and
// `{"\r": 1}` come back with the key "\" (nodejs/node#63785, crbug 521080746, open). Values are
// not affected, and a name without a backslash has nothing to decode. So a text whose member
// names hold no backslash keeps JSON.parse's result (one indexOf when the text holds none at all),
// and any other is rebuilt here with every name decoded as a string value.
import { escapePointer } from './json-pointer.ts';

/** The index of the quote that closes the string opening at `open` (valid JSON assumed). */
function closingQuote(text: string, open: number): number {
  let close = text.indexOf('"', open + 1);
  while (close !== -1) {
    let backslashes = 0;
    while (text.charCodeAt(close - 1 - backslashes) === 0x5c /* \ */) backslashes++;
    if (backslashes % 2 === 0) return close;
    close = text.indexOf('"', close + 1);
  }
  return text.length; // unreachable for valid JSON; ends a scan rather than looping
}

const isJsonSpace = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

/** True when the string at [open, close] is followed by ':', i.e. is a member name (valid JSON: nothing else is). */
function isMemberName(text: string, close: number): boolean {
  let next = close + 1;
  while (isJsonSpace(text.charCodeAt(next))) next++;
  return text.charCodeAt(next) === 0x3a /* : */;
}

/**
 * How many member names valid JSON text holds, and whether any is written with an escape. In valid
 * JSON a ':' outside a string follows a member name and nothing else. About one indexOf per string.
 */
export function memberNames(text: string): { count: number; escaped: boolean; decimal: boolean } {
  let count = 0;
  let escaped = false;
  let decimal = false;
  let slash = text.indexOf('\\'); // the first backslash at or after the current string, or -1
  let after = 0; // where the text outside strings resumes
  for (let at = text.indexOf('"'); at !== -1; at = text.indexOf('"', at + 1)) {
    if (!decimal) decimal = decimalLiteral(text, after, at);
    const close = closingQuote(text, at);
    if (isMemberName(text, close)) {
      count++;
      if (slash !== -1 && slash < at) slash = text.indexOf('\\', at);
      if (slash !== -1 && slash < close) escaped = true;
    }
    at = close;
    after = close + 1;
  }
  if (!decimal) decimal = decimalLiteral(text, after, text.length);
  return { count, escaped, decimal };
}

const isDigit = (c: number) => c >= 0x30 && c <= 0x39;
/** Whether text outside strings, in [from, to), holds a number written with a fraction or an exponent. */
function decimalLiteral(text: string, from: number, to: number): boolean {
  for (let i = from + 1; i < to; i++) {
    const c = text.charCodeAt(i);
    if ((c === 0x2e /* . */ || c === 0x65 /* e */ || c === 0x45 /* E */) && isDigit(text.charCodeAt(i - 1))) return true;
  }
  return false;
}

/** Whether a JSON number's text names an integer (5000.000 and 5e3 do; 5000.0000000000001 does not). */
export function namesInteger(source: string): boolean {
  const m = /^-?(\d+)(?:\.(\d+))?(?:[eE]([-+]?\d+))?$/.exec(source);
  if (!m) return false;
  const digits = m[1]! + (m[2] ?? '');
  const significant = digits.replace(/0+$/, '');
  if (/^0*$/.test(significant)) return true; // zero, however written
  // The value is significant × 10^power: an integer when the power is not negative.
  return Number(m[3] ?? 0) - (m[2] ?? '').length + (digits.length - significant.length) >= 0;
}

/**
 * Numbers written as non-integers that JSON.parse reads as integers (5000.0000000000001 as 5000,
 * 1e-400 as 0), replaced by `mark`; for a text memberNames found a fraction or exponent in. Needs
 * JSON.parse's source text access (V8 11.4).
 */
export function markRoundedIntegers(text: string, mark: object): unknown {
  return JSON.parse(text, function (_key, value: unknown, context?: { source?: string }) {
    return typeof value === 'number' && Number.isInteger(value) && context?.source !== undefined && !namesInteger(context.source) ? mark : value;
  });
}

/** Each member named a second (third…) time in its object, with its JSON Pointer, in text order. Iterative. */
export function repeatedMembers(text: string): { pointer: string; name: string }[] {
  type Frame = { at: string; names: Set<string> | null; index: number; key: string | null };
  const repeats: { pointer: string; name: string }[] = [];
  const frames: Frame[] = [];
  const path = (f: Frame) => `${f.at}/${f.names ? escapePointer(f.key!) : String(f.index)}`;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    const top = frames[frames.length - 1];
    if (c === 0x22 /* " */) {
      const end = closingQuote(text, i);
      if (top?.names && isMemberName(text, end)) {
        const name = JSON.parse(text.slice(i, end + 1)) as string; // a string value: read exactly
        top.key = name;
        if (top.names.has(name)) repeats.push({ pointer: path(top), name });
        top.names.add(name);
      }
      i = end;
    } else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      frames.push({ at: top ? path(top) : '', names: c === 0x7b ? new Set() : null, index: 0, key: null });
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      frames.pop();
    } else if (c === 0x2c /* , */ && top && !top.names) {
      top.index++;
    }
  }
  return repeats;
}

/**
 * JSON.parse(text), with member names exactly as written (see above). Throws as JSON.parse does, and
 * is typed as it is (`any`), so that it replaces it where the caller narrows the result itself.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function parseJsonExactly(text: string): any {
  const value: unknown = JSON.parse(text);
  if (value === null || typeof value !== 'object' || text.indexOf('\\') === -1) return value;
  return memberNames(text).escaped ? rebuild(text) : value;
}

type Container = { node: Record<string, unknown> | unknown[]; key: string | null };

/**
 * The value of valid JSON text, built without JSON.parse's member-name path: strings, numbers and
 * literals are parsed alone (as values, which V8 reads correctly); objects and arrays are built here.
 * Iterative, so nesting cannot exhaust the stack. Members are defined as JSON.parse defines them
 * (own data properties, `__proto__` included; a repeated name keeps its place and takes the last value).
 */
export function rebuild(text: string): unknown {
  const open: Container[] = [];
  let root: unknown;
  const put = (value: unknown) => {
    const top = open[open.length - 1];
    if (top === undefined) { root = value; return; }
    if (Array.isArray(top.node)) { top.node.push(value); return; }
    Object.defineProperty(top.node, top.key!, { value, writable: true, enumerable: true, configurable: true });
    top.key = null;
  };
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (isJsonSpace(c) || c === 0x2c /* , */ || c === 0x3a /* : */) continue;
    if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      const node = c === 0x7b ? {} : [];
      put(node);
      open.push({ node, key: null });
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      open.pop();
    } else if (c === 0x22 /* " */) {
      const close = closingQuote(text, i);
      const s = JSON.parse(text.slice(i, close + 1)) as string;
      const top = open[open.length - 1];
      if (top !== undefined && !Array.isArray(top.node) && top.key === null) top.key = s;
      else put(s);
      i = close;
    } else {
      let end = i + 1;
      while (end < text.length && !isJsonSpace(text.charCodeAt(end)) && ',}]'.indexOf(text[end]!) === -1) end++;
      put(JSON.parse(text.slice(i, end)));
      i = end - 1;
    }
  }
  return root;
}
