// The signature a merchant checks, in the style of Stripe webhooks:
// `gavel-signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`.
import { createHmac, timingSafeEqual } from 'node:crypto';

export const SIGNATURE_HEADER = 'gavel-signature';

export function signatureHeader(secret: string, body: string, unixSeconds: number): string {
  const mac = createHmac('sha256', secret).update(`${unixSeconds}.${body}`).digest('hex');
  return `t=${unixSeconds},v1=${mac}`;
}

/** What a merchant does with the header: true when it was made with `secret` over `body`. */
export function verifySignature(secret: string, body: string, header: string | undefined): boolean {
  const m = /^t=(\d{1,12}),v1=([0-9a-f]{64})$/.exec(header ?? '');
  if (!m) return false;
  const want = Buffer.from(signatureHeader(secret, body, Number(m[1])).split('v1=')[1]!, 'hex');
  return timingSafeEqual(want, Buffer.from(m[2]!, 'hex'));
}
