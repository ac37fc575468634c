// RFC 6962 §2.1 / RFC 9162 §2.1.1 hashing with SHA-256 and domain-separation prefixes,
// so a leaf can never be passed off as an interior node (second-preimage defence).
import { createHash } from 'node:crypto';

export const HASH_SIZE = 32;

/** MTH({}) = SHA-256() */
export const EMPTY_ROOT: Uint8Array = new Uint8Array(createHash('sha256').digest());

/** SHA-256(0x00 || data) */
export function leafHash(data: Uint8Array): Uint8Array {
  return new Uint8Array(createHash('sha256').update(new Uint8Array([0])).update(data).digest());
}

/** SHA-256(0x01 || left || right) */
export function nodeHash(left: Uint8Array, right: Uint8Array): Uint8Array {
  return new Uint8Array(
    createHash('sha256').update(new Uint8Array([1])).update(left).update(right).digest(),
  );
}
