// The active policy of a project, for the decision path. The pointer row is read on every call
// unless the caller may use a cached one (SQLite: the read epoch shows it unchanged since it was
// read; PostgreSQL: the decision's transaction checks it, CHECKED_AT_COMMIT), so an activation
// committed anywhere decides the next request everywhere; the compiled evaluator is cached, keyed by
// (project, version, hash), so each version compiles once. A damaged active version throws
// ActivePolicyDamaged, which the decision turns into DENY policy_integrity (fail closed).
import { compilePolicy, policyHash, validatePolicy, type CompiledPolicy } from '../../domain/policy/index.ts';
import type { Db, Store } from '../../store/store.ts';
import { fixedSql, queryFixed, readFixed } from '../../store/fixed-sql.ts';
import type { ReadTag } from '../../store/read-epoch.ts';
import { parseJsonExactly } from '../../lib/json-parse.ts';

export interface ActivePolicy {
  version: number;
  hash: string;
  compiled: CompiledPolicy;
}

/** Thrown when a stored version no longer matches its hash or no longer validates. */
export class PolicyIntegrityError extends Error {
  readonly code = 'policy_integrity';
}

/**
 * The project's active version is damaged (or its pointer names no version with its hash): every
 * decision under it fails closed as DENY `policy_integrity` (decision 0152, addendum of session 36).
 * The message says so without quoting the stored document.
 */
export class ActivePolicyDamaged extends PolicyIntegrityError {
  readonly version: number;
  readonly hash: string;
  constructor(version: number, hash: string) {
    super(`the active policy version ${version} no longer matches what was saved (its stored document does not parse, validate or match its hash); decisions fail closed until a sound version is activated`);
    this.version = version;
    this.hash = hash;
  }
}

const CACHE_SIZE = 256;
/**
 * Characters of stored documents whose compiled forms are kept at most: a 10,000-rule version of
 * 5 MB compiles to some 8 MB of heap, and replay (open to AUDITOR) compiles any stored version, so
 * 256 of them held about 2 GB. A version let go is only compiled again.
 */
const CACHE_CHARS = 24 * 1024 * 1024;
const cache = new Map<string, { compiled: CompiledPolicy; chars: number }>();
let cachedChars = 0;
/** Damaged versions already reported, by (project, version, hash): each is warned about once. */
const reported = new Set<string>();

/** Tells the operator, once per damaged (project, version, hash), that decisions under it fail closed. */
function reportDamaged(key: string, projectId: string, version: number, why: string): void {
  if (reported.has(key)) return;
  reported.add(key);
  if (reported.size > CACHE_SIZE) reported.delete(reported.keys().next().value as string);
  process.emitWarning(`policy version ${version} of project ${projectId} is damaged in storage (${why}); while it is active every decision is DENY policy_integrity. Save its document again as a new version and activate it`, { code: 'GAVEL_POLICY_INTEGRITY' });
}

const versionKey = (projectId: string, version: number, hash: string) => `${projectId}\u0000${version}\u0000${hash}`;

function remember(key: string, compiled: CompiledPolicy, chars: number): void {
  cachedChars -= cache.get(key)?.chars ?? 0;
  cache.delete(key);
  while (cache.size > 0 && (cache.size >= CACHE_SIZE || cachedChars + chars > CACHE_CHARS)) {
    const [oldest, entry] = cache.entries().next().value!;
    cache.delete(oldest);
    cachedChars -= entry.chars;
  }
  cache.set(key, { compiled, chars });
  cachedChars += chars;
}

/** Compiles a stored version's document, checking it still parses, validates and has its hash. */
export function compileStored(document: string, hash: string): CompiledPolicy {
  let parsed: unknown;
  try {
    parsed = parseJsonExactly(document);
  } catch {
    throw new PolicyIntegrityError('a stored policy version is no longer JSON');
  }
  const result = validatePolicy(parsed);
  if (!result.ok) throw new PolicyIntegrityError('a stored policy version no longer validates');
  if (policyHash(result.policy) !== hash) throw new PolicyIntegrityError('a stored policy version does not match its hash');
  return compilePolicy(result.policy);
}

/** Whether a stored version passes the checks every decision that loads it makes (compileStored). */
export function storedIntact(document: string, hash: string): boolean {
  try {
    compileStored(document, hash);
    return true;
  } catch (error) {
    if (error instanceof PolicyIntegrityError) return false;
    throw error;
  }
}

/** The compiled evaluator of one stored version, from the cache when possible. */
export async function compiledVersion(db: Db, projectId: string, version: number, hash: string): Promise<CompiledPolicy | null> {
  const key = versionKey(projectId, version, hash);
  const hit = cache.get(key);
  if (hit !== undefined) {
    cache.delete(key); // most recently used goes last
    cache.set(key, hit);
    return hit.compiled;
  }
  const row = await db.selectFrom('policy_versions').select(['document', 'hash'])
    .where('project_id', '=', projectId).where('version', '=', version).executeTakeFirst();
  if (!row || row.hash !== hash) return null;
  let compiled: CompiledPolicy;
  try {
    compiled = compileStored(row.document, row.hash);
  } catch (error) {
    if (error instanceof PolicyIntegrityError) reportDamaged(key, projectId, version, error.message);
    throw error;
  }
  remember(key, compiled, row.document.length);
  return compiled;
}

const POINTER = fixedSql('select version, hash from policy_active where project_id = ?');

// Pointers by project, per store, tagged with the read epoch (store/read-epoch.ts) they were read
// under: an activation anywhere bumps it, so a tagged pointer is current while the epoch is. On
// PostgreSQL they are tagged CHECKED_AT_COMMIT, and a decision that finds its pointer moved on
// forgets it (forgetActivePolicy) before it is redone.
// The entry also keeps the compiled version once resolved, so a hit costs one map lookup, or the
// damage found, so a damaged version is not read and checked again by every decision under it.
type Active = { version: number; hash: string; compiled: CompiledPolicy };
type Pointer = { version: number; hash: string };
const pointers = new WeakMap<object, Map<string, { epoch: ReadTag; pointer: Pointer | undefined; active?: Active; damaged?: ActivePolicyDamaged }>>();

/**
 * `store`: read the pointer on its reader connection (the decision's hot path). `epoch`: the read
 * epoch the caller read for this request (SQLite), which lets a pointer read under it be reused, or
 * CHECKED_AT_COMMIT (a PostgreSQL decision, whose transaction compares the pointer it was given).
 */
export async function getActivePolicy(db: Db, projectId: string, store?: Pick<Store, 'db' | 'dialect' | 'reader'>, epoch?: ReadTag): Promise<{ version: number; hash: string; compiled: CompiledPolicy } | null> {
  let byProject = store && epoch !== undefined ? pointers.get(store) : undefined;
  if (store && epoch !== undefined && !byProject) pointers.set(store, byProject = new Map());
  let hit = byProject?.get(projectId);
  let pointer: Pointer | undefined;
  if (hit && hit.epoch === epoch) {
    if (hit.active) return hit.active;
    if (hit.damaged) throw hit.damaged;
    pointer = hit.pointer;
  } else {
    hit = undefined;
    // Fixed SQL: read on every decision that has no epoch-tagged pointer (see store/fixed-sql.ts).
    pointer = store
      ? (await readFixed<{ version: number; hash: string }>(store, POINTER, [projectId]))[0]
      : (await queryFixed<{ version: number; hash: string }>(db, undefined, POINTER, [projectId]))[0];
    if (byProject) {
      if (byProject.size >= CACHE_SIZE) byProject.delete(byProject.keys().next().value!);
      byProject.set(projectId, hit = { epoch: epoch!, pointer });
    }
  }
  if (!pointer) return null;
  const version = Number(pointer.version);
  let compiled: CompiledPolicy;
  try {
    compiled = await compiledActive(db, projectId, version, pointer.hash);
  } catch (error) {
    if (!(error instanceof PolicyIntegrityError)) throw error;
    const damaged = new ActivePolicyDamaged(version, pointer.hash);
    if (hit) hit.damaged = damaged;
    throw damaged;
  }
  const active = { version, hash: pointer.hash, compiled };
  // A version's document never changes (its hash is checked), so its compiled form may stay with the pointer.
  if (hit) hit.active = active;
  return active;
}

/** The active version compiled; PolicyIntegrityError when the pointer names no version with its hash. */
async function compiledActive(db: Db, projectId: string, version: number, hash: string): Promise<CompiledPolicy> {
  const compiled = await compiledVersion(db, projectId, version, hash);
  if (compiled !== null) return compiled;
  const why = 'the active policy pointer names a version that does not exist or has another hash';
  reportDamaged(versionKey(projectId, version, hash), projectId, version, why);
  throw new PolicyIntegrityError(why);
}

/**
 * The active policy getActivePolicy would answer from its cache for this read tag, without a promise
 * (the decision's hot path); undefined when it would have to read or compile.
 */
export function cachedActivePolicy(store: object, projectId: string, epoch: ReadTag | undefined): ActivePolicy | undefined {
  if (epoch === undefined) return undefined;
  const hit = pointers.get(store)?.get(projectId);
  return hit && hit.epoch === epoch ? hit.active : undefined;
}

/** Drops a project's cached pointer: its decision found the pointer moved on (StaleReadEpoch). */
export function forgetActivePolicy(store: object, projectId: string): void {
  pointers.get(store)?.delete(projectId);
}

/** For tests and diagnostics: how many compiled versions this process holds. */
export function compiledCacheSize(): number {
  return cache.size;
}

/** For tests and diagnostics: the characters of the stored documents whose compiled forms this process holds. */
export function compiledCacheChars(): number {
  return cachedChars;
}
