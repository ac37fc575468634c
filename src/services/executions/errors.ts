// Refusals of executions; the HTTP layer renders them as problem+json with these codes.
import { Problem } from '../../http/problem.ts';

/**
 * With no merchant configured at all, the likely cause is a server started without its merchants
 * file (docs/getting-started.md, step 12, restarts it with one), which the answer names.
 */
export const unknownMerchant = (name: string, noneConfigured: boolean) => new Problem(422, 'unknown_merchant',
  noneConfigured
    ? `no merchant named "${name}" is configured in this deployment: none is (a server reads its merchants at start from the file GAVEL_MERCHANTS_FILE names, docs/executions.md)`
    : `no merchant named "${name}" is configured in this deployment`,
  { errors: [{ pointer: '/execution/merchant', code: 'unknown_merchant', message: 'not a configured merchant' }] });
export const unknownOperation = (merchant: string, op: string) => new Problem(422, 'unknown_operation', `merchant "${merchant}" has no operation "${op}"`,
  { errors: [{ pointer: '/execution/operation', code: 'unknown_operation', message: 'not an operation of this merchant' }] });
export const inProgress = (id: string) => new Problem(409, 'execution_in_progress', `execution ${id} of this action is in flight; ask again once it has an outcome`, { extra: { execution_id: id } });
export const nonceReused = () => new Problem(409, 'nonce_reused', 'this nonce is bound to a different action or payload; choose a new nonce for a new action');

/** Thrown inside the decision transaction when another request reserved the nonce first; rolls the decision back. */
export class NonceTaken extends Error {
  override readonly name = 'NonceTaken';
  constructor() { super('nonce already reserved'); }
}
