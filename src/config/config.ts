// Configuration: defaults < optional JSON config file (GAVEL_CONFIG) < GAVEL_* environment.
// Validated once at start; a bad value stops the process with a message naming the key.
import { readFileSync } from 'node:fs';
import { BlockList, isIP } from 'node:net';
import { resolve } from 'node:path';
import { parseJsonExactly, repeatedMembers, whereJsonBreaks } from '../lib/json-parse.ts';
import { parseVkey, SIG_TYPE_COSIGNATURE_V1 } from '../domain/auditlog/note.ts';
import { REPLY_TIMEOUT_MS } from '../store/postgres/dialect.ts';

export interface Config {
  host: string;
  port: number;
  dataDir: string;
  /** postgres://… selects PostgreSQL; unset means SQLite at `<dataDir>/gavel.db`. */
  databaseUrl: string | undefined;
  /** PostgreSQL: how long a statement may go unanswered before its connection is taken for dead (store/postgres/dialect.ts). */
  databaseReplyTimeoutMs: number;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  bodyLimitBytes: number;
  /**
   * How long a client has to send a whole request (request line, headers and body) before it is
   * answered 408 and the connection closed. Bounds what a slow or stalled body holds.
   */
  requestTimeoutMs: number;
  /**
   * Connections served at once; one more is closed unanswered. Each may hold a body of up to
   * bodyLimitBytes, read before any authentication, for up to requestTimeoutMs.
   */
  maxConnections: number;
  /**
   * On SIGTERM, SIGINT or SIGHUP, how long /readyz answers 503 `shutting_down` while every request is still
   * served, before the listener closes: time for a load balancer to stop sending new ones. 0: none.
   */
  shutdownDrainMs: number;
  /** Base URL of the C2SP tlog-witness the log asks to cosign checkpoints. */
  witnessUrl: string | undefined;
  witnessPort: number;
  /** The witness's cosignature/v1 vkey, required with witnessUrl: cosignatures are checked against it, never against a key the witness announces. */
  witnessVkey: string | undefined;
  /** Sign a checkpoint when this long passed since the last one (and the log grew). */
  checkpointIntervalMs: number;
  /** …or when this many events were integrated since the last one. */
  checkpointMaxEvents: number;
  /** Pause between audit-log sequencer ticks. */
  auditTickMs: number;
  /** Path of the merchants configuration file (JSON). */
  merchantsFile: string | undefined;
  /** Public base URL of the console, used for cookies (Secure when https) and origin checks. */
  publicUrl: string | undefined;
  /**
   * Reverse proxies whose X-Forwarded-For is believed (addresses or CIDR ranges); the client address
   * (login throttling, logs) is then the first address before them. Unset: the peer's own address.
   */
  trustProxy: string[] | undefined;
}

export class ConfigError extends Error {
  readonly key: string;
  constructor(key: string, message: string) {
    super(`configuration ${key}: ${message}`);
    this.key = key;
  }
}

type Spec = { env: string; file: string; parse: (raw: string) => unknown };

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/** A parser of a whole number within [min, max], as the settings below and the benchmarks' counts take it. */
export const integer = (min: number, max: number) => (raw: string): number => {
  if (!/^\d+$/.test(raw)) throw new Error(`must be an integer between ${min} and ${max}, got "${raw}"`);
  const n = Number(raw);
  // As written: Number() reads 9007199254740993 as ...992, and more digits as 1e+23.
  if (n < min || n > max) throw new Error(`must be an integer between ${min} and ${max}, got ${raw}`);
  return n;
};
const text = (raw: string) => {
  if (raw.trim() === '') throw new Error('must not be empty');
  return raw;
};
/**
 * Labels of letters, digits and hyphens (RFC 1123), optionally ending in the root's dot; underscores
 * too, which RFC 1123 leaves out but resolvers answer (Docker Compose names services `gavel_api`).
 */
const HOST_NAME = /^(?=[^]{1,254}$)[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?)*\.?$/i;
/**
 * A listen address: an IP address or a name to resolve. A URL, a port or IPv6 brackets (as the banner
 * prints the address) were taken for a name and failed to resolve only after a first start had made
 * its administrator; so was a dotted quad out of range.
 */
const listenHost = (raw: string) => {
  if (isIP(text(raw)) === 0 && (!HOST_NAME.test(raw) || /^[\d.]+$/.test(raw))) throw new Error(`must be an IP address or a host name (no scheme, port or brackets), got "${raw}"`);
  return raw;
};
/** A file system path. A leading ~ is a shell's expansion: here it would name a directory called "~". */
const fsPath = (raw: string) => {
  if (/^~(?:\/|$)/.test(text(raw))) throw new Error('~ is not expanded here (only a shell does): give the full path');
  return raw;
};
/** A witness's cosignature/v1 verifier key (`<name>+<key id>+<base64>`), as `gavel witness` prints it. */
const witnessVkey = (raw: string) => {
  let key: ReturnType<typeof parseVkey>;
  try { key = parseVkey(raw.trim()); } catch (e) { throw new Error(`must be a witness verifier key (name+id+base64): ${(e as Error).message}`); }
  if (key.type !== SIG_TYPE_COSIGNATURE_V1) throw new Error('must be a cosignature/v1 key (the witness\'s, not the log\'s)');
  return raw.trim();
};
const url = (protocols: string[], credentials = true) => (raw: string) => {
  let u: URL;
  try { u = new URL(raw); } catch { throw new Error('must be a URL'); }
  if (!protocols.includes(u.protocol)) throw new Error(`must use ${protocols.join(' or ')}`);
  // fetch refuses a URL with credentials, and these URLs are printed: they take none.
  if (!credentials && (u.username || u.password)) throw new Error('must not carry a user name or password');
  return raw;
};

/** The sslmode values node-postgres reads; any other it takes as TLS with full verification, unsaid. */
const SSL_MODES = ['disable', 'no-verify', 'prefer', 'require', 'verify-ca', 'verify-full'];
/**
 * A PostgreSQL URL whose TLS parameters node-postgres will accept: it reads the files they name only
 * when it first connects, and threw their failure there as a stack trace.
 */
const postgresUrl = (raw: string) => {
  const u = new URL(url(['postgres:', 'postgresql:'])(raw));
  const mode = u.searchParams.get('sslmode');
  if (mode !== null && !SSL_MODES.includes(mode)) throw new Error(`sslmode must be one of ${SSL_MODES.join(', ')}, got "${mode}"`);
  for (const name of ['sslcert', 'sslkey', 'sslrootcert']) {
    const file = u.searchParams.get(name);
    if (file) try { readFileSync(file); } catch (e) { throw new Error(`${name}: cannot read ${file} (${(e as Error).message})`); }
  }
  return raw;
};

/** IPv4-mapped IPv6 addresses (::ffff:a.b.c.d), however spelt: 0:0:0:0:0:ffff:…, 0::ffff:… are the same. */
const IPV4_MAPPED = new BlockList();
IPV4_MAPPED.addSubnet('::ffff:0:0', 96, 'ipv6');

/** Proxies by address or CIDR range, comma-separated; never "true" or a hop count, which would believe any client's header. */
const proxies = (raw: string): string[] => {
  const list = raw.split(',').map((p) => p.trim());
  for (const p of list) {
    const [address = '', bits, extra] = p.split('/');
    // A zone index (fe80::1%eth0) names no address a peer arrives from.
    const family = address.includes('%') ? 0 : isIP(address);
    const width = family === 4 ? 32 : 128;
    if (family === 0 || extra !== undefined || (bits !== undefined && !(/^\d{1,3}$/.test(bits) && Number(bits) <= width))) {
      throw new Error(`must list proxy addresses or CIDR ranges separated by commas (e.g. 10.0.0.5,10.1.0.0/16), got "${p}"`);
    }
    // A range as wide as the public internet would let any client name itself in X-Forwarded-For.
    // IPv4 clients are matched against IPv6 ranges in their mapped form (::ffff:a.b.c.d), so
    // ::ffff:0:0/96 is IPv4's /0. The narrowest private ranges are IPv4 /8 and IPv6 ULA's /7.
    if (bits !== undefined) {
      const mapped = family === 6 && IPV4_MAPPED.check(address, 'ipv6');
      const prefix = mapped ? Number(bits) - 96 : Number(bits);
      if (prefix < (family === 4 || mapped ? 8 : 7)) throw new Error(`${p} trusts too wide a range (any client there could choose its own address); list the proxies`);
    }
  }
  return list;
};

/** Every setting: its variable, its key in the GAVEL_CONFIG file, and its parser (README.md's table lists them). */
export const SPECS: Record<keyof Config, Spec> = {
  host: { env: 'GAVEL_HOST', file: 'host', parse: listenHost },
  port: { env: 'GAVEL_PORT', file: 'port', parse: integer(0, 65535) },
  dataDir: { env: 'GAVEL_DATA_DIR', file: 'data_dir', parse: fsPath },
  databaseUrl: { env: 'GAVEL_DATABASE_URL', file: 'database_url', parse: postgresUrl },
  databaseReplyTimeoutMs: { env: 'GAVEL_DATABASE_REPLY_TIMEOUT_MS', file: 'database_reply_timeout_ms', parse: integer(1_000, 3_600_000) },
  logLevel: {
    env: 'GAVEL_LOG_LEVEL', file: 'log_level',
    parse: (raw) => { if (!LOG_LEVELS.includes(raw)) throw new Error(`must be one of ${LOG_LEVELS.join(', ')}`); return raw; },
  },
  bodyLimitBytes: { env: 'GAVEL_BODY_LIMIT_BYTES', file: 'body_limit_bytes', parse: integer(1024, 16 * 1024 * 1024) },
  requestTimeoutMs: { env: 'GAVEL_REQUEST_TIMEOUT_MS', file: 'request_timeout_ms', parse: integer(100, 600_000) },
  maxConnections: { env: 'GAVEL_MAX_CONNECTIONS', file: 'max_connections', parse: integer(1, 1_000_000) },
  shutdownDrainMs: { env: 'GAVEL_SHUTDOWN_DRAIN_MS', file: 'shutdown_drain_ms', parse: integer(0, 300_000) },
  witnessUrl: { env: 'GAVEL_WITNESS_URL', file: 'witness_url', parse: url(['http:', 'https:'], false) },
  witnessPort: { env: 'GAVEL_WITNESS_PORT', file: 'witness_port', parse: integer(0, 65535) },
  witnessVkey: { env: 'GAVEL_WITNESS_VKEY', file: 'witness_vkey', parse: witnessVkey },
  checkpointIntervalMs: { env: 'GAVEL_CHECKPOINT_INTERVAL_MS', file: 'checkpoint_interval_ms', parse: integer(10, 3_600_000) },
  checkpointMaxEvents: { env: 'GAVEL_CHECKPOINT_MAX_EVENTS', file: 'checkpoint_max_events', parse: integer(1, 10_000_000) },
  auditTickMs: { env: 'GAVEL_AUDIT_TICK_MS', file: 'audit_tick_ms', parse: integer(5, 60_000) },
  merchantsFile: { env: 'GAVEL_MERCHANTS_FILE', file: 'merchants_file', parse: fsPath },
  publicUrl: { env: 'GAVEL_PUBLIC_URL', file: 'public_url', parse: url(['http:', 'https:'], false) },
  trustProxy: { env: 'GAVEL_TRUST_PROXY', file: 'trust_proxy', parse: proxies },
};

export const DEFAULTS: Config = {
  host: '127.0.0.1',
  port: 7400,
  dataDir: './data',
  databaseUrl: undefined,
  databaseReplyTimeoutMs: REPLY_TIMEOUT_MS,
  logLevel: 'info',
  bodyLimitBytes: 64 * 1024,
  requestTimeoutMs: 30_000,
  maxConnections: 2048,
  shutdownDrainMs: 0,
  witnessUrl: undefined,
  witnessPort: 7401,
  witnessVkey: undefined,
  checkpointIntervalMs: 1000,
  checkpointMaxEvents: 10_000,
  auditTickMs: 100,
  merchantsFile: undefined,
  publicUrl: undefined,
  trustProxy: undefined,
};

/** Reads configuration; throws ConfigError naming the first bad key. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, overrides: Partial<Config> = {}): Config {
  const fromFile: Record<string, unknown> = {};
  const path = env.GAVEL_CONFIG;
  if (path) {
    let text: string;
    try { text = readFileSync(path, 'utf8'); } catch (e) { throw new ConfigError('GAVEL_CONFIG', `cannot read ${path} (${(e as Error).message})`); }
    let parsed: unknown;
    // Not V8's message: it quotes the text around the error, a password's characters perhaps.
    try { parsed = parseJsonExactly(text); } catch (e) { throw new ConfigError('GAVEL_CONFIG', `cannot read ${path} as JSON (${whereJsonBreaks(text, e)})`); }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
      throw new ConfigError('GAVEL_CONFIG', `${path} must hold a JSON object`);
    }
    const [twice] = repeatedMembers(text);
    if (twice) throw new ConfigError(`${path}: ${twice.name}`, 'is given more than once');
    const known = new Set(Object.values(SPECS).map((s) => s.file));
    for (const [k, v] of Object.entries(parsed)) {
      if (!known.has(k)) throw new ConfigError(`${path}: ${k}`, `unknown key (known: ${[...known].join(', ')})`);
      // A value is a string or a number, as the variable would be: nothing is made a string of.
      if (typeof v !== 'string' && typeof v !== 'number') throw new ConfigError(`${path}: ${k}`, `must be a string or a number, not ${v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v}`);
      // JSON.parse has already rounded it, so no message could quote it as written.
      if (typeof v === 'number' && Number.isInteger(v) && !Number.isSafeInteger(v)) throw new ConfigError(`${path}: ${k}`, 'is a number JSON does not carry exactly (integers are exact up to 2^53 - 1 in magnitude), far beyond what any setting accepts');
      fromFile[k] = v;
    }
  }
  const config: Record<string, unknown> = { ...DEFAULTS };
  for (const [name, spec] of Object.entries(SPECS)) {
    // A variable set to the empty string is unset: the file's value, else the default, stands (so an
    // empty GAVEL_HOST does not bind another address than the file names).
    const fromEnv = env[spec.env] === '' ? undefined : env[spec.env];
    const inFile = fromFile[spec.file] === undefined ? undefined : String(fromFile[spec.file]);
    // The file's value is checked even when a variable overrides it: else it would stop the service
    // only once the variable is dropped, long after it was written.
    for (const [raw, where] of [[inFile, `${path}: ${spec.file}`], [fromEnv, spec.env]]) {
      if (raw === undefined || raw === '') continue;
      try { config[name] = spec.parse(raw); } catch (e) { throw new ConfigError(where!, (e as Error).message); }
    }
  }
  const result = { ...(config as unknown as Config), ...overrides };
  result.dataDir = resolve(result.dataDir);
  if (result.witnessUrl && !result.witnessVkey) {
    throw new ConfigError('GAVEL_WITNESS_VKEY', 'is required with GAVEL_WITNESS_URL: cosignatures are checked against the key given here (`gavel witness` prints it), never against one the witness announces');
  }
  // A key without the witness it belongs to would be dropped without a word (`gavel serve` would
  // witness nothing, `gavel up` its own local witness under another key).
  if (result.witnessVkey && !result.witnessUrl && !overrides.witnessVkey) {
    throw new ConfigError('GAVEL_WITNESS_VKEY', 'is set without GAVEL_WITNESS_URL: name the witness it belongs to, or unset it (gavel up then runs a local witness with its own key)');
  }
  return result;
}

/** A printable copy of the configuration with credentials in URLs masked (in the user part or the query). */
export function redactConfig(config: Config): Record<string, unknown> {
  const mask = (u: string | undefined) => {
    if (!u) return u;
    try {
      const x = new URL(u);
      if (x.password) x.password = '***';
      // node-postgres reads connection settings from the query too (password, sslkey, sslpassword…).
      for (const k of [...x.searchParams.keys()]) if (/pass|secret|key|token/i.test(k)) x.searchParams.set(k, '***');
      return x.toString();
    } catch { return '***'; }
  };
  return { ...config, databaseUrl: mask(config.databaseUrl), witnessUrl: mask(config.witnessUrl) };
}

/** Whether a listen address is this machine only (127.0.0.0/8, ::1, localhost). */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127(?:\.\d{1,3}){3}$/.test(h);
}

/** GAVEL_* names read by something other than the server: the tests, the benchmarks, scripts/use-node24.sh. */
const NOT_SETTINGS = /^GAVEL_(?:TEST_|BENCH_|NODE_HOME$)/;

/**
 * The GAVEL_* variables in `env` that no setting reads, each with the setting it was perhaps meant
 * for: a misspelt variable (GAVEL_PROT) would otherwise leave its setting at the default unsaid,
 * while a misspelt key in the file is refused. Warned about, not refused: a deployment may export
 * variables of its own under the prefix.
 */
export function unknownVariables(env: NodeJS.ProcessEnv = process.env): UnknownVariable[] {
  const known = ['GAVEL_CONFIG', ...Object.values(SPECS).map((s) => s.env)];
  return Object.keys(env).filter((name) => name.startsWith('GAVEL_') && !known.includes(name) && !NOT_SETTINGS.test(name)).sort()
    .map((name) => {
      const [meant] = known.map((k) => [k, editDistance(name, k)] as const).filter(([, d]) => d <= 2).sort((a, b) => a[1] - b[1]);
      return meant ? { name, meant: meant[0] } : { name };
    });
}

export interface UnknownVariable { name: string; meant?: string }

/** What is said of one. */
const unknownVariableWarning = ({ name, meant }: UnknownVariable): string =>
  `${name} is set but no setting reads it${meant ? ` (did you mean ${meant}?)` : ''}; it is ignored`;

/** Told of each GAVEL_* variable no setting reads: its warning, and which it is. */
export type WarnUnknownVariable = (message: string, unknown: UnknownVariable) => void;

/** A command without a log of its own says it on stderr, as it says its other messages. */
const warnOnStderr: WarnUnknownVariable = (message) => { process.stderr.write(`gavel: ${message}\n`); };

/**
 * The configuration, as every command that reads it reads it: a misspelt variable (GAVEL_DATABSE_URL)
 * leaves its setting at the default whichever command runs (a backup of the SQLite default, a reset
 * of another database's password), so each command warns of it alike, here.
 */
export function readConfiguration(warn: WarnUnknownVariable = warnOnStderr): Config {
  // Before the settings are checked: a refused one (GAVEL_PORT=abc) is often set beside a misspelt one.
  for (const unknown of unknownVariables()) warn(unknownVariableWarning(unknown), unknown);
  return loadConfig();
}

/** Levenshtein distance: how many single-character edits turn `a` into `b`. */
function editDistance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) next[j] = Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    row = next;
  }
  return row[b.length]!;
}
