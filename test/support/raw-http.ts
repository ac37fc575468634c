// Raw HTTP/1.1 over a socket, for what a client library would not send (or would tidy up first):
// malformed framing, repeated headers, a missing Host, CONNECT.
import assert from 'node:assert/strict';
import { connect, type AddressInfo } from 'node:net';
import type { TestService } from './service.ts';

/** Sends raw bytes and reads until the server closes the connection (rejects after 5 s). */
export function exchange(port: number, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let received = '';
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => { received += d; });
    socket.on('error', reject);
    socket.on('close', () => resolve(received));
    socket.setTimeout(5000, () => { socket.destroy(); reject(new Error(`no close; got ${JSON.stringify(received)}`)); });
    socket.write(request);
  });
}

export interface RawResponse { status: number; headers: Record<string, string>; body: string }

/** The response that starts at `start` in `raw`: status, lower-cased headers, and the body its content-length frames. */
export function responseAt(raw: string, start: number): RawResponse & { end: number } {
  const headEnd = raw.indexOf('\r\n\r\n', start);
  const [statusLine, ...lines] = raw.slice(start, headEnd).split('\r\n');
  const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
  const status = Number(statusLine!.split(' ')[1]);
  // An interim response has no body; a final one without content-length runs to the close.
  const length = status < 200 ? 0 : headers['content-length'] === undefined ? raw.length - headEnd - 4 : Number(headers['content-length']);
  return { status, headers, body: raw.slice(headEnd + 4, headEnd + 4 + length), end: headEnd + 4 + length };
}

/** Every response in `raw`, in order (interim 1xx responses included). */
export function responses(raw: string): RawResponse[] {
  const out: RawResponse[] = [];
  for (let at = 0; at < raw.length;) {
    const { end, ...response } = responseAt(raw, at);
    out.push(response);
    at = end;
  }
  return out;
}

/** The last response in `raw`. */
export function lastResponse(raw: string): RawResponse {
  const all = responses(raw);
  if (all.length === 0) throw new Error('no response received');
  return all[all.length - 1]!;
}

/** `res` is a problem+json answer with this status and code, its request id in body and header alike. */
export function assertRawProblem(res: RawResponse, status: number, code: string): void {
  assert.equal(res.status, status, res.body);
  assert.match(res.headers['content-type']!, /^application\/problem\+json/);
  const body = JSON.parse(res.body);
  assert.equal(body.code, code);
  assert.equal(body.status, status);
  assert.match(body.request_id, /^req_/);
  assert.equal(body.request_id, res.headers['x-request-id']);
  // Every answer is no-store and nosniff (http/app.ts), those sent before routing or on a bare socket too.
  assert.equal(res.headers['cache-control'], 'no-store');
  assert.equal(res.headers['x-content-type-options'], 'nosniff');
}

/** Makes `svc` listen on a loopback port of its own, for raw sockets; that port. */
export async function listenOnLoopback(svc: TestService): Promise<number> {
  await svc.app.listen({ host: '127.0.0.1', port: 0 });
  return (svc.app.server.address() as AddressInfo).port;
}
