// Leaf encoding "gavel-audit-v1": the leaf is the RFC 8785 (JCS) canonical JSON of the audit
// event record with `leaf_version` added as a member, UTF-8 encoded. Putting the version
// inside the hashed bytes means a leaf can never be reread under another encoding.
// Anyone holding the event can recompute its leaf hash with leafHashOfEvent.
import canonicalize from 'canonicalize';
import { AuditLogError } from './errors.ts';
import { leafHash, leafHashHexOfText, leafHashOfText } from './hash.ts';
import { utf8 } from './bytes.ts';
import { jsonString } from '../../lib/json-string.ts';

export const LEAF_VERSION = 'gavel-audit-v1';

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/** The audit event as stored and as shown to a verifier. Extra members are allowed and hashed. */
export interface AuditEventRecord {
  id: string;
  project_id: string | null;
  kind: string;
  actor: JsonValue;
  created_at: string;
  data: JsonValue;
  [member: string]: JsonValue;
}

const MAX_DEPTH = 64;

function checkJson(value: unknown, depth: number, path: string): void {
  if (depth > MAX_DEPTH) throw new AuditLogError('invalid_event', `nesting deeper than ${MAX_DEPTH} at ${path}`);
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new AuditLogError('invalid_event', `non-finite number at ${path}`);
    return;
  }
  if (Array.isArray(value)) {
    value.forEach((v, i) => checkJson(v, depth + 1, `${path}[${i}]`));
    return;
  }
  if (typeof value === 'object') {
    const proto = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== null) {
      throw new AuditLogError('invalid_event', `not a plain JSON object at ${path}`);
    }
    for (const [k, v] of Object.entries(value)) checkJson(v, depth + 1, `${path}.${k}`);
    return;
  }
  throw new AuditLogError('invalid_event', `${typeof value} is not JSON at ${path}`);
}

/** Canonical leaf bytes of an audit event (leaf_version gavel-audit-v1). */
export function encodeLeaf(event: AuditEventRecord): Uint8Array {
  if (event === null || typeof event !== 'object' || Array.isArray(event)) {
    throw new AuditLogError('invalid_event', 'event must be an object');
  }
  for (const key of ['id', 'kind', 'created_at'] as const) {
    if (typeof event[key] !== 'string') throw new AuditLogError('invalid_event', `${key} must be a string`);
  }
  if (Object.hasOwn(event, 'leaf_version')) {
    throw new AuditLogError('invalid_event', 'leaf_version is reserved for the encoding');
  }
  checkJson(event, 0, '$');
  const text = canonicalize({ ...event, leaf_version: LEAF_VERSION });
  if (text === undefined) throw new AuditLogError('invalid_event', 'event does not canonicalize');
  return utf8.encode(text);
}

/** leafHash(encodeLeaf(event)): what the tree stores at level 0 for this event. */
export function leafHashOfEvent(event: AuditEventRecord): Uint8Array {
  return leafHash(encodeLeaf(event));
}

/** An event as stored: `data` is already RFC 8785 canonical JSON text (services/audit/record.ts). */
export interface StoredEvent { id: string; project_id: string; kind: string; actor: string; created_at: string; data: string }

/**
 * leafHashOfEvent for a stored event whose `data` text is canonical, without parsing it back: the
 * record's members are spliced in JCS key order around the stored text. Equal to
 * leafHashOfEvent(eventRecord(row)) for every such row (tested as a property); the sequencer
 * uses it because it runs for every event.
 */
export function leafHashOfStoredEvent(e: StoredEvent): Uint8Array {
  return leafHashOfText(storedLeafText(e));
}

/** leafHashOfStoredEvent in hex (what crosses to the writer thread with a prepared decision). */
export function leafHashHexOfStoredEvent(e: StoredEvent): string {
  return leafHashHexOfText(storedLeafText(e));
}

/** The leaf's canonical text: JCS orders members by UTF-16 code units (actor, created_at, data, id, kind, leaf_version, project_id). */
const storedLeafText = (e: StoredEvent): string =>
  `{"actor":${jsonString(e.actor)},"created_at":${jsonString(e.created_at)},"data":${e.data},"id":${jsonString(e.id)},"kind":${jsonString(e.kind)},"leaf_version":"${LEAF_VERSION}","project_id":${jsonString(e.project_id)}}`;
