// Verifiable audit log: tree nodes, the sequencing state row, checkpoints; and an index so the
// sequencer finds unsequenced events without scanning the sequenced ones.
import { sql, type Kysely } from 'kysely';
import { columns } from '../columns.ts';
import type { Dialect } from '../store.ts';

export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  const c = columns(dialect);
  await db.schema.createTable('audit_nodes')
    .addColumn('level', c.integer, (col) => col.notNull())
    .addColumn('idx', c.bigint, (col) => col.notNull())
    .addColumn('hash', c.bytes, (col) => col.notNull())
    .addPrimaryKeyConstraint('audit_nodes_pk', ['level', 'idx'])
    // SQLite: the primary key is the table (one B-tree lookup per node, no rowid indirection).
    .$call((t) => (dialect === 'sqlite' ? t.modifyEnd(sql`without rowid`) : t))
    .execute();

  await db.schema.createTable('audit_log_state')
    .addColumn('id', c.integer, (col) => col.primaryKey())
    .addColumn('origin', c.text, (col) => col.notNull())
    .addColumn('size', c.bigint, (col) => col.notNull())
    .addColumn('root', c.bytes, (col) => col.notNull())
    .addColumn('updated_at', c.text, (col) => col.notNull())
    .execute();

  await db.schema.createTable('audit_checkpoints')
    .addColumn('size', c.bigint, (col) => col.primaryKey())
    .addColumn('root', c.bytes, (col) => col.notNull())
    .addColumn('note', c.text, (col) => col.notNull())
    .addColumn('created_at', c.text, (col) => col.notNull())
    .addColumn('cosignatures', c.text)
    .addColumn('witnessed_at', c.text)
    .execute();

  // Partial index: only events still waiting for a leaf index, in insertion order.
  await sql`create index audit_events_unsequenced on audit_events (seq) where leaf_index is null`.execute(db);
}
