// Merchants are deployment configuration (spec 2.3): a caller names a merchant and an operation,
// never a URL. The file is validated once at start; every error names the bad key. The shared
// secret lives in a private field, so neither logging nor JSON.stringify can print it.
import { readFileSync } from 'node:fs';
import { ConfigError } from '../config/config.ts';
import { parseJsonExactly, whereJsonBreaks } from '../lib/json-parse.ts';
import { isMemberPointer } from '../lib/json-pointer.ts';
import { isCurrencyCode } from '../domain/money/money.ts';

export const MERCHANT_METHODS = ['POST', 'PUT', 'PATCH', 'DELETE'] as const;
export type MerchantMethod = (typeof MERCHANT_METHODS)[number];
/**
 * Where an operation's payload carries the amount the merchant charges (decision 0406): `minor` a
 * JSON Pointer into the payload; `currency` one too (starting with "/"), or the operation's fixed
 * currency code. An authorize for such an operation must state the same amount.
 */
export interface AmountAt { minor: string; currency: string }
export interface Operation { method: MerchantMethod; path: string; amount?: AmountAt }

const NAME = /^[A-Za-z0-9_.-]{1,64}$/;
export const DEFAULT_TIMEOUT_MS = 10_000;
export const MAX_TIMEOUT_MS = 120_000;

export class Merchant {
  readonly name: string;
  readonly baseUrl: URL;
  readonly timeoutMs: number;
  readonly operations: ReadonlyMap<string, Operation>;
  readonly #secret: string;
  constructor(name: string, baseUrl: URL, timeoutMs: number, operations: Map<string, Operation>, secret: string) {
    this.name = name;
    this.baseUrl = baseUrl;
    this.timeoutMs = timeoutMs;
    this.operations = operations;
    this.#secret = secret;
  }
  get secret(): string { return this.#secret; }
  /** The absolute URL of an operation; always on the merchant's own origin. */
  urlOf(op: Operation): URL {
    const base = this.baseUrl.pathname.replace(/\/+$/, '');
    const u = new URL(this.baseUrl.origin + base + op.path);
    return u;
  }
  toJSON(): Record<string, unknown> {
    return { name: this.name, base_url: this.baseUrl.toString(), timeout_ms: this.timeoutMs, operations: Object.fromEntries(this.operations), secret: '***' };
  }
}

export class MerchantRegistry {
  readonly #merchants: ReadonlyMap<string, Merchant>;
  constructor(merchants: Map<string, Merchant> = new Map()) { this.#merchants = merchants; }
  get(name: string): Merchant | undefined { return this.#merchants.get(name); }
  get size(): number { return this.#merchants.size; }
  /** The longest timeout of any merchant: bounds how long a live instance keeps a call in flight. */
  get maxTimeoutMs(): number {
    let max = 0;
    for (const m of this.#merchants.values()) max = Math.max(max, m.timeoutMs);
    return max || DEFAULT_TIMEOUT_MS;
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Validates the parsed file: `{ "merchants": { "<name>": { base_url, secret, timeout_ms?, operations } } }`. */
export function parseMerchants(doc: unknown, where = 'GAVEL_MERCHANTS_FILE'): MerchantRegistry {
  const bad = (key: string, message: string): never => { throw new ConfigError(`${where}: ${key}`, message); };
  if (!isObject(doc)) bad('(root)', 'must be a JSON object with a "merchants" object');
  const root = doc as Record<string, unknown>;
  for (const k of Object.keys(root)) if (k !== 'merchants') bad(k, 'unknown key (known: merchants)');
  if (!isObject(root.merchants)) bad('merchants', 'must be an object mapping a merchant name to its configuration');
  const out = new Map<string, Merchant>();
  for (const [name, raw] of Object.entries(root.merchants as Record<string, unknown>)) {
    const at = `merchants.${name}`;
    if (!NAME.test(name)) bad(at, 'a merchant name is 1-64 characters of A-Z a-z 0-9 _ . -');
    if (!isObject(raw)) bad(at, 'must be an object');
    const m = raw as Record<string, unknown>;
    for (const k of Object.keys(m)) {
      if (!['base_url', 'secret', 'timeout_ms', 'operations'].includes(k)) bad(`${at}.${k}`, 'unknown key (known: base_url, secret, timeout_ms, operations)');
    }
    if (typeof m.base_url !== 'string') bad(`${at}.base_url`, 'must be a string (http or https URL)');
    let base: URL | undefined;
    try { base = new URL(m.base_url as string); } catch { bad(`${at}.base_url`, 'must be an absolute URL'); }
    if (base!.protocol !== 'http:' && base!.protocol !== 'https:') bad(`${at}.base_url`, 'must use http or https');
    if (base!.search || base!.hash || base!.username || base!.password) bad(`${at}.base_url`, 'must carry no query, fragment or credentials');
    if (typeof m.secret !== 'string' || m.secret.length < 16 || m.secret.length > 1024) bad(`${at}.secret`, 'must be a string of 16 to 1024 characters');
    let timeout = DEFAULT_TIMEOUT_MS;
    if (m.timeout_ms !== undefined) {
      if (typeof m.timeout_ms !== 'number' || !Number.isInteger(m.timeout_ms) || m.timeout_ms < 1 || m.timeout_ms > MAX_TIMEOUT_MS) {
        bad(`${at}.timeout_ms`, `must be an integer between 1 and ${MAX_TIMEOUT_MS}`);
      }
      timeout = m.timeout_ms as number;
    }
    if (!isObject(m.operations) || Object.keys(m.operations).length === 0) bad(`${at}.operations`, 'must be a non-empty object mapping an operation name to {method, path}');
    const ops = new Map<string, Operation>();
    for (const [opName, opRaw] of Object.entries(m.operations as Record<string, unknown>)) {
      const opAt = `${at}.operations.${opName}`;
      if (!NAME.test(opName)) bad(opAt, 'an operation name is 1-64 characters of A-Z a-z 0-9 _ . -');
      if (!isObject(opRaw)) bad(opAt, 'must be an object {method, path}');
      const op = opRaw as Record<string, unknown>;
      for (const k of Object.keys(op)) if (!['method', 'path', 'amount'].includes(k)) bad(`${opAt}.${k}`, 'unknown key (known: method, path, amount)');
      if (!MERCHANT_METHODS.includes(op.method as MerchantMethod)) bad(`${opAt}.method`, `must be one of ${MERCHANT_METHODS.join(', ')}`);
      // "%2e" is a dot to the URL parser too: "/%2e%2e/admin" would climb out of the base path as "/../admin" does.
      if (typeof op.path !== 'string' || !/^\/[A-Za-z0-9\-._~!$&'()*+,;=:@/%]*$/.test(op.path) || op.path.startsWith('//') || op.path.replace(/%2e/gi, '.').includes('..')) {
        bad(`${opAt}.path`, 'must be an absolute path starting with a single "/" (no "..", no query)');
      }
      const amount = op.amount === undefined ? undefined : parseAmountAt(op.amount, `${opAt}.amount`, bad);
      ops.set(opName, { method: op.method as MerchantMethod, path: op.path as string, ...(amount ? { amount } : {}) });
    }
    out.set(name, new Merchant(name, base!, timeout, ops, m.secret as string));
  }
  return new MerchantRegistry(out);
}

/** An operation's `amount`: `{minor: "<pointer>", currency: "<pointer>" | "<code>"}`. */
function parseAmountAt(raw: unknown, at: string, bad: (key: string, message: string) => never): AmountAt {
  if (!isObject(raw)) bad(at, 'must be an object {minor, currency} naming where the payload carries the amount');
  const a = raw as Record<string, unknown>;
  for (const k of Object.keys(a)) if (k !== 'minor' && k !== 'currency') bad(`${at}.${k}`, 'unknown key (known: minor, currency)');
  if (typeof a.minor !== 'string' || !isMemberPointer(a.minor)) bad(`${at}.minor`, 'must be a JSON Pointer into the payload, such as "/amount"');
  const currency = a.currency;
  if (typeof currency !== 'string' || !(isMemberPointer(currency) || isCurrencyCode(currency))) {
    bad(`${at}.currency`, 'must be a JSON Pointer into the payload, such as "/currency", or the operation\'s fixed currency, three capital letters such as "EUR"');
  }
  return { minor: a.minor as string, currency: currency as string };
}

/** Reads and validates the merchants file; no file configured means no merchants. */
export function loadMerchants(path: string | undefined): MerchantRegistry {
  if (!path) return new MerchantRegistry();
  let text: string;
  try { text = readFileSync(path, 'utf8'); } catch (e) { throw new ConfigError('GAVEL_MERCHANTS_FILE', `cannot read ${path} (${(e as Error).message})`); }
  let doc: unknown;
  // Not V8's message: it quotes the text around the error, a secret's characters perhaps.
  try { doc = parseJsonExactly(text); } catch (e) { throw new ConfigError('GAVEL_MERCHANTS_FILE', `cannot read ${path} as JSON (${whereJsonBreaks(text, e)})`); }
  return parseMerchants(doc, `GAVEL_MERCHANTS_FILE ${path}`);
}
