// permit_commitment: SHA-256 (lowercase hex) of one compact JWS string's bytes. It names a
// permit in `permits/{commitment}` routes and is what a child's `gavel.parent` points at.
import { createHash } from 'node:crypto';

export function permitCommitment(jws: string): string {
  return createHash('sha256').update(jws, 'utf8').digest('hex');
}

export const COMMITMENT_SYNTAX = /^[0-9a-f]{64}$/;
