// Wire shapes of the audit-log routes. Hashes are standard base64 (padded), as in checkpoints.
import { Type } from 'typebox';
import { ProjectParams } from './common.ts';

export const AuditId = Type.String({ pattern: '^aud_[0-9a-z]{26}$', description: 'Audit event id' });
export const AuditParams = Type.Object({ projectId: ProjectParams.properties.projectId, auditId: AuditId }, { additionalProperties: false });
const B64 = Type.String({ description: 'SHA-256 hash, standard base64' });

export const AuditEventRecordSchema = Type.Object({
  id: Type.String(), project_id: Type.String(), kind: Type.String(), actor: Type.String(), created_at: Type.String(),
  data: Type.Unknown({ description: 'The event fields as stored (canonical JSON)' }),
}, { description: 'The record the leaf hashes: canonicalize({...event, leaf_version}) (RFC 8785)' });

export const AuditProofSchema = Type.Object({
  audit_event_id: Type.String(),
  leaf_version: Type.String({ description: 'Leaf encoding, gavel-audit-v1' }),
  leaf_index: Type.Integer({ minimum: 0 }),
  tree_size: Type.Integer({ minimum: 1, description: 'Size of the checkpoint the path leads to' }),
  root: B64,
  path: Type.Array(B64, { description: 'RFC 9162 inclusion path, leaf side first' }),
  anchored_height: Type.Union([Type.Integer(), Type.Null()], { description: 'Size of the witnessed checkpoint anchoring the proof (equals tree_size); null when no witness is configured' }),
  witnessed: Type.Boolean(),
  checkpoint: Type.String({ description: 'C2SP signed checkpoint, the log signature then the cosignature lines' }),
  cosignatures: Type.Array(Type.String()),
  log_vkey: Type.String({ description: "The log's signed-note verifier key (pin it from another channel)" }),
  event: AuditEventRecordSchema,
});

export const ConsistencySchema = Type.Object({
  from: Type.Integer(), to: Type.Integer(), proof: Type.Array(B64), from_root: B64, to_root: B64,
  from_checkpoint: Type.Union([Type.String(), Type.Null()]), to_checkpoint: Type.Union([Type.String(), Type.Null()]),
});

const Size = Type.String({ pattern: '^(0|[1-9][0-9]{0,15})$', description: 'A tree size: a whole number in decimal digits, no sign or leading zero, at most 16 digits' });
export const ConsistencyQuery = Type.Object({ from: Size, to: Size }, { additionalProperties: false });

export const AuditEventView = Type.Object({
  id: Type.String(), kind: Type.String(), actor: Type.String(), created_at: Type.String(), data: Type.Unknown(),
  leaf_index: Type.Union([Type.Integer(), Type.Null()], { description: 'Position in the log; null until sequenced' }),
});
export const AuditPage = Type.Object({ items: Type.Array(AuditEventView), next_cursor: Type.Union([Type.String(), Type.Null()]) });

export const LogInfoSchema = Type.Object({
  origin: Type.String(), log_vkey: Type.String(), witness_vkey: Type.Union([Type.String(), Type.Null()]),
  size: Type.Integer({ description: 'Events sequenced so far' }),
  checkpoint: Type.Union([Type.String(), Type.Null()], { description: 'Newest checkpoint, with cosignatures when witnessed' }),
  witnessed_checkpoint: Type.Union([Type.String(), Type.Null()], { description: 'Newest witnessed checkpoint' }),
});

export const VerifyBody = Type.Object({ audit_event_id: AuditId }, { additionalProperties: false });
export const VerificationSchema = Type.Object({
  verification: Type.Union([Type.Literal('VERIFIED'), Type.Literal('INVALID'), Type.Literal('NOT_WITNESSED'), Type.Literal('UNAVAILABLE')]),
  independently_witnessed: Type.Boolean(),
  reason: Type.Union([Type.String(), Type.Null()]),
  evidence: Type.Object({
    local_proof: Type.Union([Type.Literal('valid'), Type.Literal('invalid')]),
    chain_witness: Type.Null({ description: 'No chain anchoring in this deployment' }),
    root: B64,
    anchored_height: Type.Integer({ description: 'Size of the checkpoint checked against' }),
    finality: Type.Union([Type.Literal('witnessed'), Type.Literal('local')]),
    leaf_index: Type.Integer(),
    witness: Type.Union([Type.String(), Type.Null()]),
  }),
});


/** 409 of a route that proves an event: no checkpoint covers it yet (services/auditlog/proofs.ts). */
export const PROOF_NOT_READY = { what: 'No checkpoint covers the event yet; retry after `retry-after`', codes: ['proof_not_ready'] };
