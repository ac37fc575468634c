// What a password must be before it is hashed: bounded so hashing cannot be made expensive, and
// long enough to matter (NIST SP 800-63B: length over composition rules). Pure.
// Same bounds as src/lib/passwords.ts (kept here so the rule stays free of the native hasher).
export const MIN_PASSWORD_LENGTH = 12;
export const MAX_PASSWORD_LENGTH = 256;

/**
 * A password's length as the rule counts it: in characters (code points), not UTF-16 units, of its
 * NFKC form, the one hashed (lib/passwords.ts).
 */
export const passwordLength = (password: string): number => [...password.normalize('NFKC')].length;

export function passwordProblem(typed: string, name: string): { code: string; message: string } | null {
  const password = typed.normalize('NFKC');
  const length = passwordLength(password);
  if (length < MIN_PASSWORD_LENGTH) return { code: 'password_too_short', message: `must have at least ${MIN_PASSWORD_LENGTH} characters` };
  if (length > MAX_PASSWORD_LENGTH) return { code: 'password_too_long', message: `must have at most ${MAX_PASSWORD_LENGTH} characters` };
  if (new Set(password).size < 4) return { code: 'password_too_weak', message: 'uses too few distinct characters' };
  if (password.toLowerCase().includes(name.toLowerCase()) && name.length >= 3) return { code: 'password_too_weak', message: 'must not contain the account name' };
  return null;
}
