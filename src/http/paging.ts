// Opaque cursors for list routes: newest first, ordered by the sortable id.
import { invalidRequest } from './problem.ts';
import { parseJsonExactly } from '../lib/json-parse.ts';

export const DEFAULT_LIMIT = 50;
export const MAX_LIMIT = 500;

export function encodeCursor(lastId: string): string {
  return Buffer.from(JSON.stringify({ b: lastId })).toString('base64url');
}

/** The id to page before, or undefined for the first page; a malformed cursor is a 400. */
export function decodeCursor(cursor: string | undefined): string | undefined {
  if (cursor === undefined) return undefined;
  try {
    const parsed = parseJsonExactly(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (typeof parsed?.b === 'string' && /^[a-z]{2,5}_[0-9a-z]{26}$/.test(parsed.b)) return parsed.b;
  } catch { /* fall through */ }
  throw invalidRequest([{ pointer: '/cursor', in: 'query', code: 'invalid_cursor', message: 'cursor is not one this service issued' }]);
}

/** Given rows fetched with limit+1, the page and the cursor for the next one. */
export function page<T extends { id: string }>(rows: T[], limit: number): { items: T[]; next_cursor: string | null } {
  const items = rows.slice(0, limit);
  const last = items[items.length - 1];
  return { items, next_cursor: rows.length > limit && last ? encodeCursor(last.id) : null };
}

/** Cursors over a composite sort key (e.g. `created_at~commitment`) rather than an id. */
export const encodeKeyCursor = (key: string): string => Buffer.from(JSON.stringify({ k: key })).toString('base64url');
export function decodeKeyCursor(cursor: string | undefined): string | undefined {
  if (cursor === undefined) return undefined;
  try {
    const parsed = parseJsonExactly(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (typeof parsed?.k === 'string' && parsed.k.length <= 300) return parsed.k;
  } catch { /* fall through */ }
  throw invalidRequest([{ pointer: '/cursor', in: 'query', code: 'invalid_cursor', message: 'cursor is not one this service issued' }]);
}
