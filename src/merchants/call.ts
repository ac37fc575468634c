// One outbound call to a configured merchant, classified (docs/executions.md):
// 2xx SUCCEEDED; 4xx FAILED (the merchant stated a refusal); any failure before the connection was
// established (refused, unresolved, unreachable, a certificate that does not verify, no connection
// within the timeout) FAILED, since no byte of the request left; everything else (timeout or reset
// once connected, 5xx, 3xx, any other error) UNKNOWN. Redirects are never followed: the call goes only where
// configuration points.
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { Socket } from 'node:net';
import type { Merchant, Operation } from './config.ts';
import { signatureHeader, SIGNATURE_HEADER } from './signature.ts';

export type CallStatus = 'SUCCEEDED' | 'FAILED' | 'UNKNOWN';
export interface CallOutcome { status: CallStatus; httpStatus: number | null; note: string }

export interface CallInput {
  merchant: Merchant; operation: Operation; payload: unknown; nonce: string; executionId: string; now: Date;
  /** Aborted when the service stops waiting for calls on shutdown: the call is given up as the timeout gives it up. */
  abandon?: AbortSignal;
}


// node:http rather than fetch: the same call cost about a quarter of the HTTP thread's time
// through fetch's web streams (docs/performance.md). Connections are kept alive per origin; an
// idle one is closed before the merchant's announced keep-alive timeout (Node's Agent honours
// the hint), so a call rarely meets a connection the merchant has just closed.
const agents = { http: new HttpAgent({ keepAlive: true }), https: new HttpsAgent({ keepAlive: true }) };

/** Kept-alive sockets whose connection (for https, its TLS handshake) has completed. The agent hands
 *  a freed socket to a queued request without marking it reused, so the socket is what is asked. */
const established = new WeakSet<Socket>();

/** The most of an answer's body read (and dropped) before its connection is closed instead. */
const DRAIN_LIMIT = 1024 * 1024;

export function callMerchant(input: CallInput): Promise<CallOutcome> {
  let text: string;
  // Bodies are bounded in depth where they are parsed (http/body.ts); should a payload still not
  // serialize, nothing was sent, and the execution must not be left in flight (then UNKNOWN).
  try { text = JSON.stringify(input.payload); } catch { return Promise.resolve({ status: 'FAILED', httpStatus: null, note: 'the payload could not be serialized: nothing was sent' }); }
  const body = Buffer.from(text);
  const url = input.merchant.urlOf(input.operation);
  const timeoutMs = input.merchant.timeoutMs;
  const https = url.protocol === 'https:';
  return new Promise((resolve) => {
    let settled = false;
    // Node holds the request's bytes until the socket is connected (for https, until the TLS
    // handshake has finished: no early data), so until then nothing can have reached the merchant.
    let connected = false;
    // The timer is not cleared when the status settles the call: it also bounds the body's drain.
    const settle = (outcome: CallOutcome) => {
      if (settled) return;
      settled = true;
      input.abandon?.removeEventListener('abort', abandoned);
      resolve(outcome);
    };
    // As the timeout does: once connected the merchant may have acted (UNKNOWN); before, nothing was sent.
    const abandoned = () => {
      settle(connected
        ? { status: 'UNKNOWN', httpStatus: null, note: 'given up unanswered as the service was shutting down: the merchant may or may not have acted' }
        : NOT_SENT_STOPPING);
      req.destroy();
    };
    // Redirects are never followed: node:http does not follow them.
    let req: ReturnType<typeof httpRequest>;
    if (input.abandon?.aborted) { resolve(NOT_SENT_STOPPING); return; }
    try {
      req = (https ? httpsRequest : httpRequest)(url, {
        method: input.operation.method,
        agent: https ? agents.https : agents.http,
        headers: {
          'content-type': 'application/json',
          'content-length': body.length,
          'idempotency-key': input.nonce,
          'gavel-execution-id': input.executionId,
          [SIGNATURE_HEADER]: signatureHeader(input.merchant.secret,
            { method: input.operation.method, path: `${url.pathname}${url.search}`, idempotencyKey: input.nonce, executionId: input.executionId, body: text },
            Math.floor(input.now.getTime() / 1000)),
        },
      }, (res: IncomingMessage) => {
        // The status line decides; the body is not needed, so it is read and dropped, but only
        // within the call's timeout and up to DRAIN_LIMIT bytes: a merchant sending a body without
        // end, or stalling in it, would otherwise be read or hold the socket forever. Past either,
        // the connection is closed (the next call opens another); the outcome stands.
        settle(classifyStatus(res.statusCode ?? 0));
        let left = DRAIN_LIMIT;
        res.on('error', () => {});
        res.on('data', (chunk: Buffer) => { if ((left -= chunk.length) < 0) req.destroy(); });
        res.on('close', () => clearTimeout(timer));
      });
    } catch (error) {
      resolve(classifyError(error, false));
      return;
    }
    input.abandon?.addEventListener('abort', abandoned, { once: true });
    req.on('socket', (socket) => {
      if (established.has(socket)) { connected = true; return; }
      socket.once(https ? 'secureConnect' : 'connect', () => { established.add(socket); connected = true; });
    });
    const timer = setTimeout(() => {
      if (!settled) settle(connected
        ? { status: 'UNKNOWN', httpStatus: null, note: `no answer within ${timeoutMs} ms: the merchant may or may not have acted` }
        : { status: 'FAILED', httpStatus: null, note: `not delivered: no connection within ${timeoutMs} ms` });
      req.destroy();
    }, timeoutMs);
    req.on('error', (error) => { clearTimeout(timer); settle(classifyError(error, connected)); });
    // A 101 to a call that asked for no upgrade: without this listener Node destroys the socket and
    // reports nothing, and the call would wait out its timeout. The merchant had the request.
    req.on('upgrade', (res: IncomingMessage, socket: Socket) => { clearTimeout(timer); socket.destroy(); settle(classifyStatus(res.statusCode ?? 101)); });
    req.end(body);
  });
}

const NOT_SENT_STOPPING: CallOutcome = { status: 'FAILED', httpStatus: null, note: 'not delivered: the service was shutting down before a connection was made' };

function classifyStatus(s: number): CallOutcome {
  if (s >= 200 && s < 300) return { status: 'SUCCEEDED', httpStatus: s, note: `merchant answered ${s}` };
  if (s >= 400 && s < 500) return { status: 'FAILED', httpStatus: s, note: `merchant refused with ${s}` };
  return { status: 'UNKNOWN', httpStatus: s, note: s >= 500 ? `merchant answered ${s}: it may or may not have acted` : `merchant answered ${s} (not followed): outcome unknown` };
}

function classifyError(e: unknown, connected: boolean): CallOutcome {
  const code = (e as { code?: string } | null)?.code;
  if (!connected) return { status: 'FAILED', httpStatus: null, note: `not delivered: ${code ?? (e as { name?: string } | null)?.name ?? 'error'}` };
  return { status: 'UNKNOWN', httpStatus: null, note: `the call failed after it may have been sent (${code ?? (e as { name?: string } | null)?.name ?? 'error'}): outcome unknown` };
}
