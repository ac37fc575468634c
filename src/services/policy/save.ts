// Saving a policy version: validate, assign the next integer version under the project's policy
// lock, store the canonical document with its hash, note and creator, audit it. Never activates.
import canonicalize from 'canonicalize';
import { policyHash, type PolicyDocument } from '../../domain/policy/index.ts';
import { newId } from '../../lib/ids.ts';
import { lockFor, type Store } from '../../store/store.ts';
import { recordAudit } from '../audit/record.ts';
import { requireValidPolicy } from './document.ts';

export interface SavedVersion {
  version: number;
  id: string;
  hash: string;
  state: 'saved';
  note: string;
  created_by: string;
  created_at: string;
}

export interface SaveInput {
  projectId: string;
  /** The principal saving it (compared by the four-eyes rule). */
  principalId: string;
  /** The audit actor (`key_…` or `prn_…`). */
  actor: string;
  /** The untrusted document as received. */
  document: unknown;
  note: string;
  at: Date;
}

export const policyLock = (projectId: string): string => `policy:${projectId}`;

/** Throws Problem 400 invalid_request (pointers under /policy) when the document is not valid; nothing is saved then. */
export async function savePolicyVersion(store: Store, input: SaveInput): Promise<SavedVersion> {
  const policy: PolicyDocument = requireValidPolicy(input.document);
  const document = canonicalize(policy) as string;
  const hash = policyHash(policy);
  const created_at = input.at.toISOString();
  return store.transaction(async (trx) => {
    await lockFor(trx, store.dialect, policyLock(input.projectId));
    const last = await trx.selectFrom('policy_versions').select((eb) => eb.fn.max('version').as('max'))
      .where('project_id', '=', input.projectId).executeTakeFirst();
    const version = Number(last?.max ?? 0) + 1;
    const id = newId('pol', input.at.getTime());
    await trx.insertInto('policy_versions').values({
      project_id: input.projectId, version, id, document, hash, note: input.note, state: 'saved',
      created_by: input.principalId, created_via: input.actor, created_at,
      activated_at: null, activated_by: null, retired_at: null,
    }).execute();
    await recordAudit(trx, {
      projectId: input.projectId, kind: 'policy.saved', actor: input.actor, at: input.at,
      data: { policy_id: id, version, hash, note: input.note, principal: input.principalId, rules: policy.rules.length },
    });
    return { version, id, hash, state: 'saved' as const, note: input.note, created_by: input.principalId, created_at };
  });
}
