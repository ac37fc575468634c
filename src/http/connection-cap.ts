// GAVEL_MAX_CONNECTIONS (config/config.ts): every connection may hold a body of up to the body
// limit, read before any authentication, for up to the request timeout, so their number bounds what
// clients can make the process hold. Node closes a connection past the cap unanswered ('drop').
import { readdirSync, readFileSync } from 'node:fs';
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

/** Descriptors kept beyond those open at the check: the PostgreSQL pool growing, merchant calls, the witness, a backup. */
const FILE_RESERVE = 64;

/**
 * The open-file limit set below the cap: past it, libuv accepts and closes each new connection
 * itself (its EMFILE reserve), so clients meet closed connections and the process logs nothing.
 * `limits` is /proc/self/limits (Node has already raised its soft limit to the hard one); `open`
 * the descriptors open now. Undefined when the limit holds the cap, or cannot be read.
 */
export function fileLimitShortfall(limits: string, open: number, max: number): { limit: number; usable: number } | undefined {
  const soft = /^Max open files\s+(\d+|unlimited)\s/m.exec(limits)?.[1];
  if (soft === undefined || soft === 'unlimited') return undefined;
  const limit = Number(soft);
  const usable = limit - open - FILE_RESERVE;
  return usable >= max ? undefined : { limit, usable: Math.max(0, usable) };
}

/** Says once, at start, when the process cannot hold GAVEL_MAX_CONNECTIONS connections (Linux; elsewhere silent). */
export function warnIfFileLimitBelowCap(app: FastifyInstance, max: number): void {
  let limits: string;
  let open: number;
  try {
    limits = readFileSync('/proc/self/limits', 'latin1');
    open = readdirSync('/proc/self/fd').length;
  } catch { return; }
  const short = fileLimitShortfall(limits, open, max);
  if (!short) return;
  app.log.warn({ open_file_limit: short.limit, max_connections: max },
    `the open-file limit (${short.limit}) holds about ${short.usable} connections, fewer than GAVEL_MAX_CONNECTIONS (${max}): past them new connections are closed unanswered and nothing is logged; raise the limit (ulimit -n, systemd LimitNOFILE=) or lower GAVEL_MAX_CONNECTIONS`);
}
