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
 * How many member names valid JSON text holds, whether any is written with an escape, and whether
 * a number is written as a non-integer that reads as an integer (5000.0000000000001 as 5000: see
 * `namesInteger`). In valid JSON a ':' outside a string follows a member name and nothing else.
 * About one indexOf per string; numbers with a fraction or an exponent are read once more each.
 */
export function memberNames(text: string): { count: number; escaped: boolean; rounded: boolean } {
  let count = 0;
  let escaped = false;
  let rounded = false;
  let slash = text.indexOf('\\'); // the first backslash at or after the current string, or -1
  let after = 0; // where the text outside strings resumes
  for (let at = text.indexOf('"'); at !== -1; at = text.indexOf('"', at + 1)) {
    if (!rounded) rounded = roundedNumberIn(text, after, at);
    const close = closingQuote(text, at);
    if (isMemberName(text, close)) {
      count++;
      if (slash !== -1 && slash < at) slash = text.indexOf('\\', at);
      if (slash !== -1 && slash < close) escaped = true;
    }
    at = close;
    after = close + 1;
  }
  if (!rounded) rounded = roundedNumberIn(text, after, text.length);
  return { count, escaped, rounded };
}

const isDigit = (c: number) => c >= 0x30 && c <= 0x39;
const isNumberChar = (c: number) => isDigit(c) || c === 0x2e || c === 0x65 || c === 0x45 || c === 0x2b || c === 0x2d;

/** Whether text outside strings, in [from, to), holds a number with a fraction or exponent that reads as an integer. */
function roundedNumberIn(text: string, from: number, to: number): boolean {
  for (let i = from; i < to; i++) {
    const c = text.charCodeAt(i);
    if (!isDigit(c) && c !== 0x2d) continue;
    let end = i + 1;
    let fraction = false;
    let exponent = false;
    while (end < to && isNumberChar(text.charCodeAt(end))) {
      const d = text.charCodeAt(end);
      if (d === 0x2e) fraction = true;
      else if (d === 0x65 || d === 0x45) exponent = true;
      end++;
    }
    // Without an exponent, fewer than 16 digits with a fraction read as a fraction (doubles carry 15
    // significant digits exactly, and integers from 2^53 on have 16 digits): nothing to look at.
    if (exponent || (fraction && end - i > 16)) {
      const token = text.slice(i, end);
      if (Number.isInteger(Number(token)) && !namesInteger(token)) return true;
    }
    i = end;
  }
  return false;
}

/**
 * Whether a JSON number's text names an integer (5000.000 and 5e3 do; 5000.0000000000001 does not).
 * Linear in the text: no regular expression (a backtracking `0+$` over a long run of zeros that does
 * not end the text took quadratic time, seconds for one request).
 */
export function namesInteger(source: string): boolean {
  const n = source.length;
  let i = source.charCodeAt(0) === 0x2d ? 1 : 0;
  const intStart = i;
  while (i < n && isDigit(source.charCodeAt(i))) i++;
  const intEnd = i;
  if (intEnd === intStart) return false;
  let fracStart = i;
  let fracEnd = i;
  if (i < n && source.charCodeAt(i) === 0x2e) {
    fracStart = ++i;
    while (i < n && isDigit(source.charCodeAt(i))) i++;
    fracEnd = i;
    if (fracEnd === fracStart) return false;
  }
  let exponent = 0;
  if (i < n && (source.charCodeAt(i) === 0x65 || source.charCodeAt(i) === 0x45)) {
    const expStart = ++i;
    if (i < n && (source.charCodeAt(i) === 0x2b || source.charCodeAt(i) === 0x2d)) i++;
    const digitsStart = i;
    while (i < n && isDigit(source.charCodeAt(i))) i++;
    if (i === digitsStart) return false;
    exponent = Number(source.slice(expStart, i)); // ±Infinity for absurdly long exponents: still ordered
  }
  if (i !== n) return false;
  // Trailing zeros of the significant digits (the fraction's, then the integer part's) raise the power.
  let zeros = 0;
  for (let k = fracEnd - 1; k >= fracStart && source.charCodeAt(k) === 0x30; k--) zeros++;
  const fractionDigits = fracEnd - fracStart;
  if (zeros === fractionDigits) for (let k = intEnd - 1; k >= intStart && source.charCodeAt(k) === 0x30; k--) zeros++;
  if (zeros === fractionDigits + (intEnd - intStart)) return true; // zero, however written
  // The value is (significant digits) × 10^(exponent − fraction digits + trailing zeros).
  return exponent - fractionDigits + zeros >= 0;
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

/** Each member named a second (third…) time in its object, with its JSON Pointer, in text order (the first `max`). Iterative. */
export function repeatedMembers(text: string, max = Infinity): { pointer: string; name: string }[] {
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
        if (top.names.has(name)) {
          repeats.push({ pointer: path(top), name });
          if (repeats.length >= max) return repeats;
        }
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

/**
 * Where JSON.parse stopped on `text`, read off V8's message, without its excerpt of the text: V8
 * quotes the characters around the error, which in a body or a configuration file may be a secret.
 */
export function whereJsonBreaks(text: string, error: unknown): string {
  const message = error instanceof Error ? error.message : '';
  const at = /at position (\d+)/.exec(message);
  if (at) {
    const offset = Number(at[1]);
    const before = text.slice(0, offset);
    return `unexpected character at offset ${offset} (line ${before.split('\n').length}, column ${offset - before.lastIndexOf('\n')})`;
  }
  if (message.startsWith('Unexpected end')) return 'it ends before the value is complete';
  // JSON.parse refuses a byte order mark (RFC 8259 §8.1), which editors on Windows write.
  if (text.startsWith('\ufeff')) return 'it starts with a byte order mark (U+FEFF); remove it';
  const token = /^Unexpected token '(.)'/u.exec(message);
  if (!token) return 'it does not parse';
  // A character no one can see (a control, a format character) is named by its code point.
  const char = token[1]!;
  return /^[\p{L}\p{N}\p{P}\p{S}]$/u.test(char) ? `unexpected character ${JSON.stringify(char)}` : `unexpected character U+${char.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;
}
