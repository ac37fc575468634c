// Requests Node's HTTP parser refuses (a Content-Length that is not a number, both Content-Length
// and Transfer-Encoding, a malformed header line) never reach Fastify, whose default answer is its
// own JSON. They are problems like every other refusal; the connection is closed after the answer,
// since nothing after the bad request on it can be framed.
import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { newId } from '../lib/ids.ts';
import { Problem } from './problem.ts';
import { rawProblem } from './message-checks.ts';

function problemFor(code: string | undefined): Problem {
  switch (code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT': return new Problem(408, 'request_timeout', 'the request was not received in time');
    case 'HPE_HEADER_OVERFLOW': return new Problem(431, 'headers_too_large', 'the request headers are larger than this service accepts');
    default: return new Problem(400, 'malformed_request', 'the request is not well-formed HTTP (its framing, its request line or a header)');
  }
}

type Pending = { _httpMessage?: (ServerResponse & { _headerSent?: boolean }) | null };
// Sockets already being refused: after its error Node's parser reports again for each later chunk.
const refusing = new WeakSet<Socket>();

/** Fastify's `clientErrorHandler`: called with the instance as `this`. */
export function clientErrorHandler(this: FastifyInstance, error: Error & { code?: string }, socket: Socket): void {
  // A reset connection has nobody left to answer.
  if (error.code === 'ECONNRESET' || socket.destroyed || refusing.has(socket)) return;
  refusing.add(socket);
  const requestId = newId('req');
  // Not the error itself: Node's parser errors carry `rawPacket`, the request's bytes, API key and
  // session cookie included, which the error serializer would write out whole.
  const { code, reason, bytesParsed } = error as typeof error & { reason?: string; bytesParsed?: number };
  this.log.debug({ err: { message: error.message, code, reason, bytesParsed }, request_id: requestId }, 'refusing a request that is not well-formed HTTP');
  answerInTurn(socket, problemFor(error.code), requestId, error);
}

// The answers to whole requests before the bad one on this connection come first. Node's own
// handler writes its 400 before a response in flight whose headers are not yet sent, and the client
// would take it for that request's answer (say, a decision that was in fact recorded).
function answerInTurn(socket: Socket, problem: Problem, requestId: string, error: Error): void {
  const inFlight = (socket as Socket & Pending)._httpMessage;
  if (inFlight?.req.complete) {
    // Node hands the socket to the next queued response before this listener runs.
    inFlight.once('finish', () => answerInTurn(socket, problem, requestId, error));
    return;
  }
  // Nothing in flight, or the response in flight is the bad request's own (its body could not be framed).
  if (!socket.destroyed && socket.writable && !inFlight?._headerSent) {
    socket.write(rawProblem(problem, requestId));
  }
  socket.destroy(error);
}
