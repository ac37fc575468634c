// Verifies an approval signature: Ed25519 by the approval key over the obligation's canonical
// statement. Never throws; a malformed key or signature is simply not a valid approval.
import { ed25519PublicKey, ed25519Verify } from '../permit/ed25519.ts';
import { approvalStatement, type ObligationFacts } from './statement.ts';

export function verifyApproval(publicKey: Uint8Array, obligation: ObligationFacts, signature: Uint8Array): boolean {
  if (!(signature instanceof Uint8Array) || signature.length !== 64) return false;
  const key = ed25519PublicKey(publicKey);
  if (!key) return false;
  return ed25519Verify(key, approvalStatement(obligation).bytes, signature);
}
