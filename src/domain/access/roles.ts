// The five roles of the spec (section 5.4). ADMIN implies no other role: separation of duties.
export const ROLES = ['ADMIN', 'AUDITOR', 'APPROVER', 'POLICY_AUTHOR', 'PERMIT_ISSUER'] as const;
export type Role = (typeof ROLES)[number];
export const isRole = (value: unknown): value is Role => typeof value === 'string' && (ROLES as readonly string[]).includes(value);

/** True when the caller holds at least one of `allowed` (an empty list means any authenticated caller). */
export function permits(held: ReadonlySet<Role>, allowed: readonly Role[]): boolean {
  return allowed.length === 0 || allowed.some((r) => held.has(r));
}
