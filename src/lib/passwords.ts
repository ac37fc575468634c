// Argon2id at OWASP's recommended minimum (m=19 MiB, t=2, p=1); @node-rs/argon2's defaults are lower.
import { randomBytes } from 'node:crypto';
import { hash, verify } from '@node-rs/argon2';

// Algorithm is an ambient const enum upstream, which type stripping cannot inline: 2 = Argon2id.
const ARGON2ID = 2;

export const ARGON2_PARAMS = { algorithm: ARGON2ID as never, memoryCost: 19456, timeCost: 2, parallelism: 1 } as const;
/** Longest password accepted, bounded before hashing so a huge one cannot cost the server. */
export const MAX_PASSWORD_LENGTH = 256;
export const MIN_PASSWORD_LENGTH = 12;

/**
 * A password as it is hashed and compared: NFKC-normalised (NIST SP 800-63B, 5.1.1.2), so one typed
 * on another keyboard or system (a precomposed "é" or "e" and a combining accent, a full-width
 * letter) is the same password.
 */
export const normalizePassword = (password: string): string => password.normalize('NFKC');

export const hashPassword = (password: string): Promise<string> => hash(normalizePassword(password), ARGON2_PARAMS);

/**
 * Compares the normalised password; a password that normalising changes is also compared as
 * typed, since hashes made before passwords were normalised (session 51) hold it so.
 */
export async function verifyPassword(stored: string, password: string): Promise<boolean> {
  const normalized = normalizePassword(password);
  try {
    if (await verify(stored, normalized)) return true;
    return normalized !== password && await verify(stored, password);
  } catch { return false; }
}

/** A password Gavel makes for a person (first start, `gavel reset-password`): 144 random bits, 24 characters. */
export const newPassword = (): string => randomBytes(18).toString('base64url');
