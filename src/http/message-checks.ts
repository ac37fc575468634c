// What the Node server would otherwise answer on its own, or pass on silently, before Fastify
// routes a request: a request message whose headers are ambiguous or incomplete, an `Expect` it
// cannot meet, and CONNECT. Each is a problem with a request id, like every other refusal, and none
// belongs to an operation (the OpenAPI document's description states them once).
import { STATUS_CODES, type IncomingMessage, type RequestListener, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { newId } from '../lib/ids.ts';
import { loggedUrl, unroutedUrl } from './logged-url.ts';
import type { RouteTable } from './route-table.ts';
import { Problem, problemBody } from './problem.ts';

// Headers of which Node keeps the first and drops any repeat (`message.headers`), and that decide
// what Gavel does: who is asking, how the body is read, which origin the console is. A proxy, a
// signer or a log in front may have acted on another of the repeats than Gavel would, so a repeat
// is refused rather than resolved. Repeated Content-Length and Transfer-Encoding never get here
// (Node's parser refuses them: http/client-errors.ts); the others Gavel reads Node joins into one
// value that no check accepts (x-csrf-token, origin, sec-fetch-site) or that means the same joined
// (cookie, x-forwarded-for).
const HOST = 1;
const AUTHORIZATION = 2;
const CONTENT_TYPE = 4;
const NAMES: Record<number, string> = { [HOST]: 'host', [AUTHORIZATION]: 'authorization', [CONTENT_TYPE]: 'content-type' };

/** True when `name` is `lower` in any case; the spellings clients send are tried before lower-casing. */
const named = (name: string, lower: string, title: string): boolean => name === lower || name === title || name.toLowerCase() === lower;

/** The watched header `name` is, as a bit; 0 for any other. By length first: most names are never compared. */
function watched(name: string): number {
  switch (name.length) {
    case 4: return named(name, 'host', 'Host') ? HOST : 0;
    case 12: return named(name, 'content-type', 'Content-Type') ? CONTENT_TYPE : 0;
    case 13: return named(name, 'authorization', 'Authorization') ? AUTHORIZATION : 0;
    default: return 0;
  }
}

/** Why `req`'s header section cannot be taken as sent, or null. One pass over the raw header names. */
export function headerFault(req: IncomingMessage): Problem | null {
  const raw = req.rawHeaders;
  let seen = 0;
  let repeated = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const bit = watched(raw[i]!);
    repeated |= seen & bit;
    seen |= bit;
  }
  if (repeated !== 0) {
    const names = Object.keys(NAMES).map(Number).filter((bit) => repeated & bit).map((bit) => NAMES[bit]);
    return new Problem(400, 'duplicate_header', `send each of these headers once: ${names.join(', ')} (which of the repeats is meant is ambiguous)`);
  }
  // Node's parser passes two versions besides 1.x: a request line without one (HTTP/0.9, which
  // RFC 9112 no longer has: its answer would carry no status or headers) and HTTP/2.0 spelt as text.
  if (req.httpVersionMajor !== 1) {
    return req.httpVersionMajor === 0
      ? new Problem(400, 'malformed_request', 'a request line must end with its version (HTTP/1.1)', { headers: { connection: 'close' } })
      : new Problem(505, 'http_version_not_supported', `HTTP/${req.httpVersion} is not spoken as text: send HTTP/1.1`, { headers: { connection: 'close' } });
  }
  // RFC 9112 §3.2: a request target has no fragment, and clients strip one. Node's parser lets `#`
  // through, and the router read what follows it as the query (`…/agents/state#agent=…` answered 200).
  if (req.url !== undefined && req.url.includes('#')) {
    return new Problem(400, 'bad_url', 'the URL is not valid: a request target carries no fragment (#)');
  }
  // RFC 9112 §6.1: Node's parser takes any codings that end in chunked and undoes only that one, so a
  // body sent `gzip, chunked` reached the JSON parser still compressed. Chunked alone is read.
  const coding = req.headers['transfer-encoding'];
  if (coding !== undefined && coding.trim().toLowerCase() !== 'chunked') {
    return new Problem(501, 'not_implemented', 'the only transfer coding this service reads is chunked, alone: send the body uncompressed', { headers: { connection: 'close' } });
  }
  // RFC 9112 §3.2. Node's own check (requireHostHeader, off) answered without a body or request id.
  if ((seen & HOST) === 0 && req.httpVersionMinor === 1) {
    return new Problem(400, 'malformed_request', 'an HTTP/1.1 request must carry a Host header', { headers: { connection: 'close' } });
  }
  return null;
}

/**
 * True while a body the request declares has not been read: an answer sent then closes the
 * connection, or Node would read and drop the rest, however long, to keep it. A request with
 * neither Content-Length nor Transfer-Encoding has no body (RFC 9112 §6.3), so its connection stays.
 */
export function bodyUnread(req: IncomingMessage): boolean {
  return !req.complete && (req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0);
}

/**
 * Requests a connection may have waiting behind one not yet answered (pipelined); one more closes
 * it. Node parses every request it has read before any is answered, and each waiting one holds its
 * request, its reply and then its answer: a client that pipelines without reading the answers ran
 * the process out of memory (20 connections of `GET /healthz`).
 */
export const MAX_PIPELINED_REQUESTS = 32;
const waiting = new WeakMap<Socket, number>();

/**
 * Counts `res` among its connection's waiting answers; false when there are too many. Node gives a
 * response its socket only when those before it are sent, so a request that is not pipelined (the
 * usual case) costs one property read.
 */
function mayWait(req: IncomingMessage, res: ServerResponse): boolean {
  if (res.socket !== null) return true;
  const socket = req.socket;
  const count = (waiting.get(socket) ?? 0) + 1;
  if (count > MAX_PIPELINED_REQUESTS) return false;
  waiting.set(socket, count);
  res.once('close', () => { waiting.set(socket, waiting.get(socket)! - 1); });
  return true;
}

/** What every answer carries (http/app.ts sets them on those routed): the refusals here carry them too. */
const EVERY_ANSWER = { 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' } as const;
const EVERY_ANSWER_LINES = Object.entries(EVERY_ANSWER).map(([name, value]) => `${name}: ${value}\r\n`).join('');

/** A problem as raw HTTP/1.1 bytes, for a socket no response object is left on; it asks to close. */
export function rawProblem(problem: Problem, requestId: string): string {
  const body = JSON.stringify(problemBody(problem, requestId));
  const extra = Object.entries(problem.headers ?? {}).filter(([name]) => name !== 'connection').map(([name, value]) => `${name}: ${value}\r\n`).join('');
  return `HTTP/1.1 ${problem.status} ${STATUS_CODES[problem.status]}\r\ncontent-type: application/problem+json\r\n`
    + EVERY_ANSWER_LINES
    + `content-length: ${Buffer.byteLength(body)}\r\nx-request-id: ${requestId}\r\n${extra}connection: close\r\n\r\n${body}`;
}

function tooManyWaiting(app: FastifyInstance, req: IncomingMessage): void {
  if (req.socket.destroyed) return;
  app.log.debug({ remote_address: req.socket.remoteAddress }, `closing a connection with more than ${MAX_PIPELINED_REQUESTS} pipelined requests waiting for their answers`);
  req.socket.destroy();
}

function refuse(app: FastifyInstance, routes: Pick<RouteTable, 'paths'>, req: IncomingMessage, res: ServerResponse, problem: Problem): void {
  const requestId = newId('req');
  app.log.debug({ request_id: requestId, method: req.method, url: unroutedUrl(req.url ?? '/', routes.paths()), code: problem.code }, 'refusing a request before routing');
  const body = JSON.stringify(problemBody(problem, requestId));
  res.writeHead(problem.status, {
    'content-type': 'application/problem+json', 'content-length': Buffer.byteLength(body), 'x-request-id': requestId,
    ...EVERY_ANSWER,
    ...problem.headers, ...(bodyUnread(req) ? { connection: 'close' } : {}),
  });
  res.end(body);
}

/** Requests whose 100 Continue waits for their body to be read, with the keep-alive their answer had. */
const awaitingContinue = new WeakMap<IncomingMessage, { res: ServerResponse; keepAlive: boolean }>();

/**
 * Sends the 100 Continue a request asked for, as its body is about to be read (http/body.ts). Until
 * then its answer closes the connection: a client answered before any 100 sends no body, which a
 * connection kept alive would read its next request as.
 */
export function sendContinue(req: IncomingMessage): void {
  // Every JSON body passes here (the authorize hot path among them); few ask to continue.
  if (req.headers.expect === undefined) return;
  const waiting = awaitingContinue.get(req);
  if (waiting === undefined) return;
  awaitingContinue.delete(req);
  waiting.res.shouldKeepAlive = waiting.keepAlive;
  waiting.res.writeContinue();
}

/**
 * Puts the checks in front of Fastify's request listener on `app.server`, and answers the events
 * Node would answer bare: an `Expect` other than 100-continue (417), CONNECT (501). The server must
 * be made with `requireHostHeader: false` (http/app.ts), so that a missing Host reaches the check.
 */
export function installMessageChecks(app: FastifyInstance, routes: Pick<RouteTable, 'paths'>): void {
  const server = app.server;
  const listeners = server.listeners('request') as RequestListener[];
  if (listeners.length !== 1) throw new Error(`expected Fastify's one request listener, found ${listeners.length}`);
  const route = listeners[0]!;
  server.removeAllListeners('request');
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    // Nothing can be answered before the answers ahead are read: the connection goes, and its requests with it.
    if (!mayWait(req, res)) { tooManyWaiting(app, req); return; }
    const fault = headerFault(req);
    if (fault === null) route(req, res);
    else refuse(app, routes, req, res, fault);
  });
  // Node would send 100 Continue before any listener saw the request: a request refused anyway is
  // answered without asking for its body. So is one whose body its route refuses unread (a declared
  // length past its limit, another media type, no route): the 100 waits until the body is read.
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    if (!mayWait(req, res)) { tooManyWaiting(app, req); return; }
    const fault = headerFault(req);
    if (fault !== null) { refuse(app, routes, req, res, fault); return; }
    if (bodyUnread(req)) {
      awaitingContinue.set(req, { res, keepAlive: res.shouldKeepAlive });
      res.shouldKeepAlive = false;
    } else {
      res.writeContinue();
    }
    route(req, res);
  });
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
    if (!mayWait(req, res)) { tooManyWaiting(app, req); return; }
    refuse(app, routes, req, res, headerFault(req) ?? new Problem(417, 'expectation_failed', 'the only expectation this service meets is "Expect: 100-continue"'));
  });
  // Gavel is no proxy. Without a listener Node closes the connection without a word. After CONNECT
  // Node no longer parses the connection, so it is closed after the answer.
  server.on('connect', (req: IncomingMessage, socket: Socket) => {
    const requestId = newId('req');
    app.log.debug({ request_id: requestId, url: loggedUrl(req.url ?? '/') }, 'refusing CONNECT');
    socket.on('error', () => {});
    socket.end(rawProblem(new Problem(501, 'not_implemented', 'this service does not tunnel: CONNECT is not implemented'), requestId), () => socket.destroy());
  });
}
