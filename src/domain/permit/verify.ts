// Full verification of a presented permit for one request by one agent.
import { checkPermitTime } from './check-time.ts';
import { verifyPermitSignatures } from './verify-signatures.ts';
import type { SignatureContext } from './verify-signatures.ts';
import type { VerifyResult } from './types.ts';
import { fail } from './types.ts';

export interface VerifyContext extends SignatureContext {
  now: Date;
  /** The DID the request claims to act as; must be the leaf's subject. */
  expectedAgent: string;
}

/**
 * Never throws: every failure is a value naming the check. Order: size and syntax, linkage
 * and attenuation, signatures, acting agent, time.
 */
export async function verifyPermit(presented: unknown, ctx: VerifyContext): Promise<VerifyResult> {
  try {
    const verified = await verifyPermitSignatures(presented, ctx);
    if (!verified.ok) return verified;
    const { permit } = verified;
    if (permit.agent !== ctx.expectedAgent) {
      return fail('subject_mismatch', 'the permit was granted to a different agent than the one acting', { link: permit.delegation_depth });
    }
    const time = checkPermitTime(permit, ctx.now);
    if (!time.ok) return time;
    return verified;
  } catch {
    // Fail closed on anything unforeseen; the detail deliberately carries nothing from the error.
    return fail('verification_error', 'the permit could not be verified');
  }
}
