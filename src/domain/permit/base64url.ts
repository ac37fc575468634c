// Strict base64url (RFC 7515 §2: no padding). Buffer's decoder skips bad characters
// silently, so the alphabet and canonical form are checked first.

const ALPHABET = /^[A-Za-z0-9_-]*$/;

export function base64urlEncode(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64url');
}

/** Decodes canonical unpadded base64url; null on anything else. */
export function base64urlDecode(text: string): Uint8Array | null {
  if (!ALPHABET.test(text) || text.length % 4 === 1) return null;
  const bytes = Buffer.from(text, 'base64url');
  // Non-zero unused trailing bits would make two strings decode to the same bytes.
  if (bytes.toString('base64url') !== text) return null;
  return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
