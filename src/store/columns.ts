// Column types that differ between the two engines, so migrations read the same on both.
import { sql, type ColumnDataType, type RawBuilder } from 'kysely';
import type { Dialect } from './store.ts';

export function columns(dialect: Dialect) {
  return {
    text: 'text' as ColumnDataType,
    bigint: 'bigint' as ColumnDataType,
    integer: 'integer' as ColumnDataType,
    bytes: (dialect === 'postgres' ? 'bytea' : 'blob') as ColumnDataType,
    /** Auto-incrementing row number; may have gaps, never used as a log position. */
    serial: (dialect === 'postgres' ? 'bigserial' : 'integer') as ColumnDataType,
    boolean: (dialect === 'postgres' ? 'boolean' : 'integer') as ColumnDataType,
  };
}

export const nowDefault = (dialect: Dialect): RawBuilder<unknown> =>
  dialect === 'postgres' ? sql`(to_char(now() at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))` : sql`(strftime('%Y-%m-%dT%H:%M:%fZ','now'))`;
