// The signature a merchant checks, in the style of Stripe webhooks, over the whole request that
// matters: `gavel-signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, signed)>`, where `signed`
// is the time, METHOD, path and query, idempotency key and gavel-execution-id, each followed by a
// line feed, then the body. No field before the body can hold a line feed (a nonce is printable
// ASCII, a path a URL's), so no two requests sign the same text: a captured request cannot be
// replayed under another idempotency key, as another execution, or to another operation.
import { createHmac, timingSafeEqual } from 'node:crypto';

export const SIGNATURE_HEADER = 'gavel-signature';

/** What the signature covers besides the time. */
export interface SignedRequest {
  method: string;
  /** Path and query, as the request line carries them (`/charges?x=1`). */
  path: string;
  idempotencyKey: string;
  executionId: string;
  body: string;
}

const signedText = (t: number, r: SignedRequest) => `${t}\n${r.method.toUpperCase()}\n${r.path}\n${r.idempotencyKey}\n${r.executionId}\n${r.body}`;

export function signatureHeader(secret: string, request: SignedRequest, unixSeconds: number): string {
  const mac = createHmac('sha256', secret).update(signedText(unixSeconds, request)).digest('hex');
  return `t=${unixSeconds},v1=${mac}`;
}

/** What a merchant does with the header: true when it was made with `secret` over this request. */
export function verifySignature(secret: string, request: SignedRequest, header: string | undefined): boolean {
  const m = /^t=(\d{1,12}),v1=([0-9a-f]{64})$/.exec(header ?? '');
  if (!m) return false;
  const want = Buffer.from(signatureHeader(secret, request, Number(m[1])).split('v1=')[1]!, 'hex');
  return timingSafeEqual(want, Buffer.from(m[2]!, 'hex'));
}
