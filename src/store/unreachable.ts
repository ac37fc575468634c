// Whether an error means the database could not be reached or dropped the session: nothing is
// wrong with the request, and it may be retried (503 database_unavailable; a retry of a write that
// may or may not have committed).
export function databaseUnreachable(error: unknown): boolean {
  if (error === null || typeof error !== 'object') return false;
  const e = error as { code?: unknown; severity?: unknown; message?: unknown };
  const code = typeof e.code === 'string' ? e.code : '';
  // Node's socket errors; PostgreSQL's class 08 (connection exception) and 57P0x (the server shutting down or starting).
  if (['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH'].includes(code) || code.startsWith('08') || /^57P0[1-3]$/.test(code)) return true;
  // A FATAL error ends the session: the server refused the connection (55000 the database does not
  // allow connections now, 53300 too many connections, 3D000 the database is gone, 28xxx the role
  // may not log in) or closed it. Never the request's fault. (Errors of a statement are ERROR.)
  if (e.severity === 'FATAL' || e.severity === 'PANIC') return true;
  // node-postgres's own, which carry no code.
  return typeof e.message === 'string' && /^(Connection terminated|Client has encountered a connection error|timeout exceeded when trying to connect|Client was closed and is not queryable)/.test(e.message);
}

/** PostgreSQL's lock_not_available: a lock wait outlasted its lock_timeout; the transaction changed nothing. */
export const lockWaitTimedOut = (error: unknown): boolean => (error as { code?: unknown } | null)?.code === '55P03';
