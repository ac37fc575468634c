// Argon2id at OWASP's recommended minimum (m=19 MiB, t=2, p=1); @node-rs/argon2's defaults are lower.
import { randomBytes } from 'node:crypto';
import { hash, verify } from '@node-rs/argon2';

// Algorithm is an ambient const enum upstream, which type stripping cannot inline: 2 = Argon2id.
const ARGON2ID = 2;

export const ARGON2_PARAMS = { algorithm: ARGON2ID as never, memoryCost: 19456, timeCost: 2, parallelism: 1 } as const;
/** Longest password accepted, bounded before hashing so a huge one cannot cost the server. */
export const MAX_PASSWORD_LENGTH = 256;
export const MIN_PASSWORD_LENGTH = 12;

export const hashPassword = (password: string): Promise<string> => hash(password, ARGON2_PARAMS);

export async function verifyPassword(stored: string, password: string): Promise<boolean> {
  try { return await verify(stored, password); } catch { return false; }
}

/** A password Gavel makes for a person (first start, `gavel reset-password`): 144 random bits, 24 characters. */
export const newPassword = (): string => randomBytes(18).toString('base64url');
