// The document hash names a policy version's content: SHA-256 over RFC 8785 (JCS) canonical
// JSON, so key order and number spelling never change it.
import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import type { PolicyDocument } from './types.ts';

/** Lowercase hex SHA-256 of the RFC 8785 canonical JSON of the document. */
export function policyHash(doc: PolicyDocument): string {
  const canonical = canonicalize(doc);
  if (canonical === undefined) throw new TypeError('policyHash: the document has no JSON form');
  return createHash('sha256').update(canonical, 'utf8').digest('hex');
}
