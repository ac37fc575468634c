// One outbound call to a configured merchant, classified (docs/executions.md):
// 2xx SUCCEEDED; 4xx FAILED (the merchant stated a refusal); a connection refused before anything
// was sent FAILED (nothing was delivered); everything else (timeout, reset after sending, 5xx,
// 3xx, any other error) UNKNOWN. Redirects are never followed: the call goes only where
// configuration points.
import type { Merchant, Operation } from './config.ts';
import { signatureHeader, SIGNATURE_HEADER } from './signature.ts';

export type CallStatus = 'SUCCEEDED' | 'FAILED' | 'UNKNOWN';
export interface CallOutcome { status: CallStatus; httpStatus: number | null; note: string }

export interface CallInput { merchant: Merchant; operation: Operation; payload: unknown; nonce: string; executionId: string; now: Date }

/** Codes that mean the connection was never established, so no byte of the request left. */
const NOT_DELIVERED = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN']);

export async function callMerchant(input: CallInput): Promise<CallOutcome> {
  const body = JSON.stringify(input.payload);
  const url = input.merchant.urlOf(input.operation);
  let res: Response;
  try {
    res = await fetch(url, {
      method: input.operation.method,
      redirect: 'manual',
      signal: AbortSignal.timeout(input.merchant.timeoutMs),
      headers: {
        'content-type': 'application/json',
        'idempotency-key': input.nonce,
        'gavel-execution-id': input.executionId,
        [SIGNATURE_HEADER]: signatureHeader(input.merchant.secret, body, Math.floor(input.now.getTime() / 1000)),
      },
      body,
    });
  } catch (e) {
    return classifyError(e, input.merchant.timeoutMs);
  }
  // The status line decides; the body is not needed, so it is dropped without waiting for it.
  void res.body?.cancel().catch(() => {});
  const s = res.status;
  if (s >= 200 && s < 300) return { status: 'SUCCEEDED', httpStatus: s, note: `merchant answered ${s}` };
  if (s >= 400 && s < 500) return { status: 'FAILED', httpStatus: s, note: `merchant refused with ${s}` };
  return { status: 'UNKNOWN', httpStatus: s, note: s >= 500 ? `merchant answered ${s}: it may or may not have acted` : `merchant answered ${s} (not followed): outcome unknown` };
}

function classifyError(e: unknown, timeoutMs: number): CallOutcome {
  const err = e as { name?: string; cause?: { code?: string; name?: string } };
  if (err?.name === 'TimeoutError' || err?.cause?.name === 'TimeoutError') {
    return { status: 'UNKNOWN', httpStatus: null, note: `no answer within ${timeoutMs} ms: the merchant may or may not have acted` };
  }
  const code = err?.cause?.code;
  if (code && NOT_DELIVERED.has(code)) return { status: 'FAILED', httpStatus: null, note: `not delivered: ${code}` };
  return { status: 'UNKNOWN', httpStatus: null, note: `the call failed after it may have been sent (${code ?? err?.name ?? 'error'}): outcome unknown` };
}
