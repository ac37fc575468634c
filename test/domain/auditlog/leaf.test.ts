import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { encodeLeaf, leafHashOfEvent, LEAF_VERSION, type AuditEventRecord } from '../../../src/domain/auditlog/leaf.ts';
import { AuditLogError } from '../../../src/domain/auditlog/errors.ts';

const event: AuditEventRecord = {
  kind: 'decision',
  id: 'aud_01',
  project_id: 'prj_1',
  actor: { type: 'agent', id: 'did:example:a' },
  created_at: '2025-01-02T03:04:05.000Z',
  data: { decision: 'ALLOW', amount: 1.5, tags: ['b', 'a'], 'é': null },
};

test('leaf is the JCS canonical JSON of the event with leaf_version, and its hash is SHA-256(0x00 || leaf)', () => {
  const text = new TextDecoder().decode(encodeLeaf(event));
  assert.equal(
    text,
    '{"actor":{"id":"did:example:a","type":"agent"},"created_at":"2025-01-02T03:04:05.000Z","data":{"amount":1.5,"decision":"ALLOW","tags":["b","a"],"é":null},"id":"aud_01","kind":"decision","leaf_version":"gavel-audit-v1","project_id":"prj_1"}',
  );
  assert.equal(LEAF_VERSION, 'gavel-audit-v1');
  const want = createHash('sha256').update(Buffer.from([0])).update(text, 'utf8').digest();
  assert.deepEqual(Buffer.from(leafHashOfEvent(event)), want);
  // Member order does not matter; any value change does.
  const reordered = JSON.parse(JSON.stringify({ data: event.data, id: event.id, kind: event.kind, actor: event.actor, created_at: event.created_at, project_id: event.project_id }));
  assert.deepEqual(leafHashOfEvent(reordered), leafHashOfEvent(event));
  assert.notDeepEqual(leafHashOfEvent({ ...event, data: { ...(event.data as object), amount: 1.51 } }), leafHashOfEvent(event));
});

test('events that are not plain JSON are refused with invalid_event', () => {
  const bad: unknown[] = [
    null,
    [],
    { ...event, id: 1 },
    { ...event, leaf_version: 'other' },
    { ...event, data: { n: Number.NaN } },
    { ...event, data: { n: Infinity } },
    { ...event, data: { d: new Date(0) } },
    { ...event, data: { u: undefined } },
    { ...event, data: { b: 1n } },
  ];
  let deep: unknown = 1;
  for (let i = 0; i < 100; i++) deep = [deep];
  bad.push({ ...event, data: deep });
  for (const b of bad) {
    assert.throws(() => encodeLeaf(b as AuditEventRecord), (e) => e instanceof AuditLogError && e.code === 'invalid_event');
  }
});

test('nesting is refused from exactly the documented depth; created_at must be a string', () => {
  const nest = (d: number) => { let v: unknown = 1; for (let i = 0; i < d; i++) v = [v]; return v; };
  assert.ok(encodeLeaf({ ...event, data: nest(63) } as AuditEventRecord));
  assert.throws(() => encodeLeaf({ ...event, data: nest(64) } as AuditEventRecord), (e) => e instanceof AuditLogError && e.code === 'invalid_event');
  assert.throws(() => encodeLeaf({ ...event, created_at: 1 } as unknown as AuditEventRecord), (e) => e instanceof AuditLogError && e.code === 'invalid_event');
});

test('property: the spliced hash of a stored event equals the hash of its parsed record, for any canonical data', async () => {
  const fc = (await import('fast-check')).default;
  const canonicalize = (await import('canonicalize')).default;
  const { leafHashOfStoredEvent, leafHashHexOfStoredEvent } = await import('../../../src/domain/auditlog/leaf.ts');
  const { eventRecord } = await import('../../../src/services/auditlog/log.ts');
  const json = fc.jsonValue({ maxDepth: 4 }).filter((v) => v !== null && typeof v === 'object' && !Array.isArray(v));
  fc.assert(fc.property(fc.string(), fc.string(), fc.string(), fc.string({ unit: 'grapheme' }), fc.string(), json, (id, project, kind, actor, at, data) => {
    const row = { id, project_id: project, kind, actor, created_at: at, data: canonicalize(data)! };
    assert.deepEqual(leafHashOfStoredEvent(row), leafHashOfEvent(eventRecord(row)));
    // The hex form is what a decision's events carry to the writer thread: the same leaf hash.
    assert.equal(leafHashHexOfStoredEvent(row), Buffer.from(leafHashOfEvent(eventRecord(row))).toString('hex'));
  }), { numRuns: 500 });
});
