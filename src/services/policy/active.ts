// The active policy of a project, for the decision path. The pointer row is read on every call
// unless the caller may use a cached one (SQLite: the read epoch shows it unchanged since it was
// read; PostgreSQL: the decision's transaction checks it, CHECKED_AT_COMMIT), so an activation
// committed anywhere decides the next request everywhere; the compiled evaluator is cached, keyed by
// (project, version, hash), so each version compiles once.
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

const CACHE_SIZE = 256;
const cache = new Map<string, CompiledPolicy>();

function remember(key: string, compiled: CompiledPolicy): void {
  cache.set(key, compiled);
  if (cache.size > CACHE_SIZE) cache.delete(cache.keys().next().value as string);
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
  const key = `${projectId}\u0000${version}\u0000${hash}`;
  const hit = cache.get(key);
  if (hit !== undefined) {
    cache.delete(key); // most recently used goes last
    cache.set(key, hit);
    return hit;
  }
  const row = await db.selectFrom('policy_versions').select(['document', 'hash'])
    .where('project_id', '=', projectId).where('version', '=', version).executeTakeFirst();
  if (!row || row.hash !== hash) return null;
  const compiled = compileStored(row.document, row.hash);
  remember(key, compiled);
  return compiled;
}

const POINTER = fixedSql('select version, hash from policy_active where project_id = ?');

// Pointers by project, per store, tagged with the read epoch (store/read-epoch.ts) they were read
// under: an activation anywhere bumps it, so a tagged pointer is current while the epoch is. On
// PostgreSQL they are tagged CHECKED_AT_COMMIT, and a decision that finds its pointer moved on
// forgets it (forgetActivePolicy) before it is redone.
// The entry also keeps the compiled version once resolved, so a hit costs one map lookup.
type Active = { version: number; hash: string; compiled: CompiledPolicy };
const pointers = new WeakMap<object, Map<string, { epoch: ReadTag; pointer: { version: number; hash: string } | undefined; active?: Active }>>();

/**
 * `store`: read the pointer on its reader connection (the decision's hot path). `epoch`: the read
 * epoch the caller read for this request (SQLite), which lets a pointer read under it be reused, or
 * CHECKED_AT_COMMIT (a PostgreSQL decision, whose transaction compares the pointer it was given).
 */
export async function getActivePolicy(db: Db, projectId: string, store?: Pick<Store, 'db' | 'dialect' | 'reader'>, epoch?: ReadTag): Promise<{ version: number; hash: string; compiled: CompiledPolicy } | null> {
  let byProject = store && epoch !== undefined ? pointers.get(store) : undefined;
  if (store && epoch !== undefined && !byProject) pointers.set(store, byProject = new Map());
  let hit = byProject?.get(projectId);
  let pointer: { version: number; hash: string } | undefined;
  if (hit && hit.epoch === epoch) {
    if (hit.active) return hit.active;
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
  const compiled = await compiledVersion(db, projectId, version, pointer.hash);
  if (compiled === null) throw new PolicyIntegrityError('the active policy pointer names a version that does not exist');
  const active = { version, hash: pointer.hash, compiled };
  // A version's document never changes (its hash is checked), so its compiled form may stay with the pointer.
  if (hit) hit.active = active;
  return active;
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
