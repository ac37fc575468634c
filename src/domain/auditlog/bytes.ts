// Small byte helpers shared by the note formats. Strict decoders: a hostile string
// must fail with a typed error, never decode leniently.
import { AuditLogError } from './errors.ts';

const BASE64_RE = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

export function toBase64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
}

/** Standard base64 (RFC 4648 §4) with padding; rejects anything non-canonical. */
export function fromBase64(text: string): Uint8Array {
  if (!BASE64_RE.test(text)) throw new AuditLogError('malformed_note', 'invalid base64');
  const out = new Uint8Array(Buffer.from(text, 'base64'));
  if (toBase64(out) !== text) throw new AuditLogError('malformed_note', 'non-canonical base64');
  return out;
}

export function toHex(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');
}

const HEX_RE = /^(?:[0-9a-f]{2})*$/;

/**
 * The same bytes as a plain Uint8Array, without a copy: a Buffer from Node's pool, or a BLOB a
 * driver read back. (Copying into an ArrayBuffer of its own allocates a backing store each time.)
 */
export const plainView = (b: Uint8Array): Uint8Array => new Uint8Array(b.buffer, b.byteOffset, b.byteLength);

export function fromHex(text: string): Uint8Array {
  if (!HEX_RE.test(text)) throw new AuditLogError('malformed_note', 'invalid hex');
  return plainView(Buffer.from(text, 'hex'));
}

export function concat(...parts: Uint8Array[]): Uint8Array {
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Uint8Array(n);
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let d = 0;
  for (let i = 0; i < a.length; i++) d |= (a[i] ?? 0) ^ (b[i] ?? 0);
  return d === 0;
}

export const utf8 = new TextEncoder();
export const utf8Decoder = new TextDecoder('utf-8', { fatal: true });
