// GAVEL_MAX_CONNECTIONS (config/config.ts): every connection may hold a body of up to the body
// limit, read before any authentication, for up to the request timeout, so their number bounds what
// clients can make the process hold. Node closes a connection past the cap unanswered ('drop').
import type { FastifyInstance } from 'fastify';

/** At most one warning a minute (timed on the monotonic clock): a flood of connections past the cap must not become a flood of log lines. */
const LOG_EVERY_MS = 60_000;

export function installConnectionCap(app: FastifyInstance, max: number): void {
  const server = app.server;
  server.maxConnections = max;
  let refused = 0;
  let loggedAt = -Infinity;
  let closingIdle = false;
  server.on('drop', () => {
    refused++;
    const now = performance.now();
    // Keep-alive connections waiting for a next request give way to clients with one to send: else
    // connections left open after one request would keep every other client out for the keep-alive timeout.
    // Closing them walks every connection: once a turn of the event loop, not for each refusal of a flood.
    if (!closingIdle) {
      closingIdle = true;
      setImmediate(() => { closingIdle = false; server.closeIdleConnections(); });
    }
    if (now - loggedAt >= LOG_EVERY_MS) {
      loggedAt = now;
      app.log.warn({ max_connections: max, refused }, `refusing connections: ${max} are open (GAVEL_MAX_CONNECTIONS); idle keep-alive connections are closed to make room`);
      refused = 0;
    }
  });
}
