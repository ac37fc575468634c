// What crosses the thread boundary: calls in, outcomes out, both in batches (one message per turn
// of the event loop, not one per unit). Errors travel as data and are rebuilt on arrival, with
// their class when it is one the callers test for.
import { Problem } from '../../http/problem.ts';
import { NonceTaken } from '../../services/executions/errors.ts';
import { StaleReadEpoch } from '../../store/read-epoch.ts';

export interface CallMessage { id: number; name: string; args: unknown }

/**
 * A batch crosses as JSON text when every member is plain JSON (calls of the procedures listed as
 * such, and their successful outcomes): V8 writes and parses JSON about twice as fast as it
 * structured-clones the same objects, and a decision's plan crosses twice per request. Anything
 * else (dates, bytes, errors) crosses by structured clone.
 */
export type WireBatch<T> = T[] | string;
export const encodeBatch = <T>(batch: T[], json: boolean): WireBatch<T> => (json ? JSON.stringify(batch) : batch);
export const decodeBatch = <T>(message: WireBatch<T>): T[] => (typeof message === 'string' ? JSON.parse(message) as T[] : message);
/**
 * Outcomes of committed units, as the writer thread posts them: `synced` if it fdatasynced the WAL
 * (once, for this message) after their commit, `syncError` if it tried and failed (then nothing may
 * be acknowledged again); otherwise the receiving thread makes them durable.
 */
export interface OutcomeBatch { outcomes: WireBatch<OutcomeMessage>; synced: boolean; syncError?: WireError }
export type OutcomeMessage = { id: number; ok: true; value: unknown } | { id: number; ok: false; error: WireError };
export interface WireError { name: string; message: string; stack?: string; props: Record<string, unknown> }

export function toWire(error: unknown): WireError {
  if (!(error instanceof Error)) return { name: 'Error', message: String(error), props: {} };
  const props: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(error)) {
    try { structuredClone(v); props[k] = v; } catch { /* not transferable: dropped */ }
  }
  return { name: error.name, message: error.message, ...(error.stack ? { stack: error.stack } : {}), props };
}

export function fromWire(w: WireError): Error {
  let error: Error;
  if (w.name === 'NonceTaken') error = new NonceTaken();
  else if (w.name === 'StaleReadEpoch') error = new StaleReadEpoch();
  else if ('status' in w.props && 'code' in w.props && 'detail' in w.props) {
    const p = w.props as { status: number; code: string; detail: string; errors?: never; extra?: Record<string, unknown>; headers?: Record<string, string> };
    error = new Problem(p.status, p.code, p.detail, { ...(p.errors ? { errors: p.errors } : {}), ...(p.extra ? { extra: p.extra } : {}), ...(p.headers ? { headers: p.headers } : {}) });
  } else {
    error = Object.assign(new Error(w.message), w.props);
    error.name = w.name;
  }
  if (w.stack) error.stack = `${w.stack}\n    at (writer thread)`;
  return error;
}
