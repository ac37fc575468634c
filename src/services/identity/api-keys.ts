// Minting an API key: 256 random bits shown once; only the SHA-256 is stored. The key carries a
// subset of its holder's current roles, so minting never grants a role the holder lacks.
import { randomBytes } from 'node:crypto';
import { API_KEY_PREFIX, hashSecret } from '../../http/auth/api-key.ts';
import { Problem } from '../../http/problem.ts';
import { newId } from '../../lib/ids.ts';
import type { Role } from '../../domain/access/roles.ts';
import type { Tx } from '../../store/store.ts';
import { recordAudit } from '../audit/record.ts';

export interface MintedKey { id: string; secret: string; roles: Role[]; name: string; created_at: string }

export async function mintApiKey(trx: Tx, input: { projectId: string; principalId: string; name: string; roles: Role[]; actor: string; at?: Date }): Promise<MintedKey> {
  const member = await trx.selectFrom('memberships').select('revoked_at')
    .where('project_id', '=', input.projectId).where('principal_id', '=', input.principalId).executeTakeFirst();
  if (!member || member.revoked_at) throw new Problem(422, 'not_a_member', 'an API key can only be minted for a current member of the project');
  const held = new Set((await trx.selectFrom('role_grants').select('role')
    .where('project_id', '=', input.projectId).where('principal_id', '=', input.principalId).execute()).map((r) => r.role));
  const missing = input.roles.filter((r) => !held.has(r));
  if (missing.length > 0) {
    throw new Problem(422, 'role_not_held', `the key's holder does not hold ${missing.join(', ')}; a key carries only roles its holder has`);
  }
  const roles = [...new Set(input.roles)].sort() as Role[];
  const secret = API_KEY_PREFIX + randomBytes(32).toString('base64url');
  const id = newId('key');
  const created_at = (input.at ?? new Date()).toISOString();
  await trx.insertInto('api_keys').values({
    id, project_id: input.projectId, principal_id: input.principalId, name: input.name, secret_hash: hashSecret(secret),
    roles: JSON.stringify(roles), created_at, created_by: input.actor, revoked_at: null, revoked_by: null,
  }).execute();
  await recordAudit(trx, { projectId: input.projectId, kind: 'api_key.minted', actor: input.actor, data: { key_id: id, principal_id: input.principalId, roles, name: input.name } });
  return { id, secret, roles, name: input.name, created_at };
}
