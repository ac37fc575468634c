// Opaque cursors for list routes: newest first, ordered by the sortable id or a composite key.
// A cursor names the list it came from (an id's prefix, or a key cursor's list name), so one
// handed to another list is refused rather than read as the end of it, or its start.
import { invalidRequest } from './problem.ts';
import { parseJsonExactly } from '../lib/json-parse.ts';
import { illFormedString } from './validation.ts';
import type { IdPrefix } from '../lib/ids.ts';

/** A page's size when the query names none; the largest (500) is the PageLimit pattern's (schemas/common.ts). */
export const DEFAULT_LIMIT = 50;

export function encodeCursor(lastId: string): string {
  return Buffer.from(JSON.stringify({ b: lastId })).toString('base64url');
}

/**
 * A cursor this list did not issue. An empty one stays refused (DESIGN.md: a cursor is the opaque
 * `next_cursor` of a page; no empty value is one), but clients that send an unset parameter as
 * `?cursor=` are told to leave it out.
 */
export const invalidCursor = (cursor: string) => invalidRequest([{
  pointer: '/cursor', in: 'query', code: 'invalid_cursor',
  message: cursor === '' ? 'cursor is empty; leave it out for the first page' : 'cursor is not one this list issued; send the next_cursor of the page before, or leave it out for the first page',
}]);

/** The id (of this list's `prefix`) to page before, or undefined for the first page; any other cursor is a 400. */
export function decodeCursor(cursor: string | undefined, prefix: IdPrefix): string | undefined {
  if (cursor === undefined) return undefined;
  try {
    const parsed = parseJsonExactly(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (typeof parsed?.b === 'string' && /^[a-z]{2,5}_[0-9a-z]{26}$/.test(parsed.b) && parsed.b.startsWith(`${prefix}_`)) return parsed.b;
  } catch { /* fall through */ }
  throw invalidCursor(cursor);
}

/** Given rows fetched with limit+1, the page and the cursor for the next one. */
export function page<T extends { id: string }>(rows: T[], limit: number): { items: T[]; next_cursor: string | null } {
  const items = rows.slice(0, limit);
  const last = items[items.length - 1];
  return { items, next_cursor: rows.length > limit && last ? encodeCursor(last.id) : null };
}

/**
 * The longest sort key a key cursor carries: a timestamp, a separator and the longest DID (agents
 * are listed by `created_at~did`), whose cursor PageCursor's length admits.
 */
export const MAX_KEY_CURSOR_KEY = 2100;

/**
 * Cursors over a composite sort key (e.g. `created_at~commitment`) of the list named `list`. A key
 * no store can hold (a NUL, which PostgreSQL's text refuses, or a lone surrogate) was never issued:
 * forged, it is refused here rather than failing the query.
 */
export const encodeKeyCursor = (key: string, list: string): string => Buffer.from(JSON.stringify({ k: key, l: list })).toString('base64url');
export function decodeKeyCursor(cursor: string | undefined, list: string): string | undefined {
  if (cursor === undefined) return undefined;
  try {
    const parsed = parseJsonExactly(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (typeof parsed?.k === 'string' && parsed.k.length <= MAX_KEY_CURSOR_KEY && illFormedString(parsed.k) === null && parsed.l === list) return parsed.k;
  } catch { /* fall through */ }
  throw invalidCursor(cursor);
}
