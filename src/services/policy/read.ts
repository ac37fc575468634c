// Reading policy versions: the active one with its document, and the list of every version.
import { Problem } from '../../http/problem.ts';
import type { Db } from '../../store/store.ts';
import type { PolicyVersionState } from '../../store/schema/policy.ts';
import { createHash } from 'node:crypto';
import { ActivePolicyDamaged, storedIntact } from './active.ts';

export interface VersionSummary {
  version: number;
  id: string;
  state: PolicyVersionState;
  hash: string;
  note: string;
  created_by: string;
  created_at: string;
  activated_at: string | null;
  activated_by: string | null;
  retired_at: string | null;
}

export interface ActiveVersion extends VersionSummary {
  /** The document's stored text, checked to be intact: valid JSON, served as it is. */
  document: string;
}

const SUMMARY = ['version', 'id', 'state', 'hash', 'note', 'created_by', 'created_at', 'activated_at', 'activated_by', 'retired_at'] as const;

const summary = (r: VersionSummary): VersionSummary => ({ ...r, version: Number(r.version) });

export const noActivePolicy = () => new Problem(404, 'no_active_policy', 'this project has no active policy; save a version and activate it');

let fullChecks = 0;
/** For tests and diagnostics: how many stored documents reading the active policy has checked in full. */
export const fullIntegrityChecks = (): number => fullChecks;

const VERIFIED_SIZE = 256;
/** SHA-256 of each stored text found intact, by (project, version, hash). */
const verified = new Map<string, string>();

/**
 * storedIntact, in full only for a text not already found intact: a check of a 10,000-rule version
 * (parse, validate, hash) holds the thread that decides for hundreds of milliseconds, and any key
 * of the project may read the active policy. A text once checked is known again by its digest.
 */
function intactAsRead(projectId: string, version: number, document: string, hash: string): boolean {
  const key = `${projectId}\u0000${version}\u0000${hash}`;
  const digest = createHash('sha256').update(document, 'utf8').digest('hex');
  if (verified.get(key) === digest) return true;
  fullChecks++;
  if (!storedIntact(document, hash)) return false;
  verified.delete(key);
  verified.set(key, digest);
  if (verified.size > VERIFIED_SIZE) verified.delete(verified.keys().next().value as string);
  return true;
}

/**
 * The active version and its document; 404 `no_active_policy` when there is none, 500
 * `policy_integrity` when it is damaged in storage: a document that is not what was saved (and
 * hashed) is not served as the policy in force (decision 0152, addendum of session 36).
 */
export async function readActiveVersion(db: Db, projectId: string): Promise<ActiveVersion> {
  const row = await db.selectFrom('policy_active as a')
    .innerJoin('policy_versions as v', (j) => j.onRef('v.project_id', '=', 'a.project_id').onRef('v.version', '=', 'a.version'))
    .select(SUMMARY.map((c) => `v.${c}` as const)).select(['v.document', 'a.hash as pointer_hash'])
    .where('a.project_id', '=', projectId).executeTakeFirst();
  if (!row) throw noActivePolicy();
  const { document, pointer_hash, ...rest } = row;
  if (pointer_hash !== rest.hash || !intactAsRead(projectId, Number(rest.version), document, rest.hash)) {
    throw new Problem(500, 'policy_integrity', new ActivePolicyDamaged(Number(rest.version), pointer_hash).message);
  }
  return { ...summary(rest), document };
}

/**
 * The active version as the JSON text of GET …/policy, the stored document inside it as stored:
 * parsing and re-serializing a 10,000-rule document held the thread that decides for ~0.1 s a read.
 */
export function activeVersionJson(active: ActiveVersion): string {
  const { document, ...rest } = active;
  return `${JSON.stringify(rest).slice(0, -1)},"policy":${document}}`;
}

/** Versions newest first, `before` exclusive; fetches limit+1 so the caller can tell if more exist. */
export async function listVersions(db: Db, projectId: string, limit: number, before?: number): Promise<VersionSummary[]> {
  let q = db.selectFrom('policy_versions').select([...SUMMARY]).where('project_id', '=', projectId);
  if (before !== undefined) q = q.where('version', '<', before);
  const rows = await q.orderBy('version', 'desc').limit(limit + 1).execute();
  return rows.map(summary);
}

/** One stored version's document and hash; 404 when the version does not exist. */
export async function readVersion(db: Db, projectId: string, version: number): Promise<{ version: number; hash: string; document: string }> {
  const row = await db.selectFrom('policy_versions').select(['version', 'hash', 'document'])
    .where('project_id', '=', projectId).where('version', '=', version).executeTakeFirst();
  if (!row) throw new Problem(404, 'policy_version_not_found', `policy version ${version} does not exist in this project`);
  return { version: Number(row.version), hash: row.hash, document: row.document };
}
