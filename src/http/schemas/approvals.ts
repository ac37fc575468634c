// Wire shapes of obligations, approvals and approval keys (docs/approvals.md).
import { Type } from 'typebox';
import { AgentDid } from './agents.ts';
import { PageCursor, PageLimit, Money, Nullable, oneLineText, ProjectParams, Reason, Timestamp } from './common.ts';

export const ApprovalRequestId = Type.String({ pattern: '^apr_[0-9a-z]{26}$', description: 'Approval request (obligation) id' });
const APPROVAL_KEY_ID = '^apk_[0-9a-z]{26}$';
export const ApprovalKeyId = Type.String({ pattern: APPROVAL_KEY_ID, description: 'Approval key id' });
const PrincipalId = Type.String({ pattern: '^prn_[0-9a-z]{26}$' });

export const ApprovalStatusSchema = Type.Union([Type.Literal('pending'), Type.Literal('approved'), Type.Literal('consumed'), Type.Literal('withdrawn'), Type.Literal('expired'), Type.Literal('lapsed')],
  { description: 'pending → approved → consumed | withdrawn (revoked, the spec\'s name); pending or approved past expires_at reads as expired; approved whose key was retired or whose approver left or lost APPROVER reads as lapsed' });

export const ApprovalView = Type.Object({
  id: Type.String({ description: 'Approval id (apv_)' }),
  key_id: Type.String(),
  approver: Type.String({ description: 'Principal whose approval key signed' }),
  approved_at: Timestamp,
  recorded_by: Type.String({ description: 'API key or principal that recorded it' }),
  revoked_at: Nullable(Timestamp),
  revoked_by: Nullable(Type.String()),
  revoke_reason: Nullable(Type.String()),
  consumed_at: Nullable(Timestamp),
  consumed_by_decision: Nullable(Type.String()),
});

export const ObligationView = Type.Object({
  id: ApprovalRequestId,
  status: ApprovalStatusSchema,
  agent: Type.String(),
  action: Type.String(),
  resource: Type.String(),
  amount: Nullable(Money),
  intent: Nullable(Type.String()),
  execution: Nullable(Type.Object({ merchant: Type.String(), operation: Type.String(), payload: Type.Unknown() }, { description: 'The merchant call the request asked for; only the same call (merchant, operation, payload) discharges the obligation' })),
  policy_version: Type.Integer(),
  matched_rules: Type.Array(Type.String()),
  permit_commitment: Nullable(Type.String()),
  decision_id: Type.String({ description: 'The decision that opened the obligation' }),
  requested_by: Nullable(Type.String(), { description: 'The API key whose request opened the obligation; the person holding it cannot approve it (422 `self_approval`). Null for obligations recorded before the service kept it' }),
  created_at: Timestamp,
  expires_at: Timestamp,
  statement: Type.String({ description: 'The exact bytes (UTF-8) an approver signs: RFC 8785 JSON of type gavel-approval/v1, members sorted by name at every depth, no white space. Sign it as it is' }),
  approval: Nullable(ApprovalView),
});

export const ObligationList = Type.Object({ approvals: Type.Array(ObligationView), next_cursor: Nullable(Type.String()) });

export const ObligationListQuery = Type.Object({
  cursor: Type.Optional(PageCursor),
  limit: Type.Optional(PageLimit),
  status: Type.Optional(ApprovalStatusSchema),
  agent: Type.Optional(AgentDid),
}, { additionalProperties: false });

export const RecordApprovalBody = Type.Object({
  approval_request_id: ApprovalRequestId,
  key_id: Type.String({ pattern: APPROVAL_KEY_ID, description: "The approval key's `id` (`apk_…`), as its registration answered: not its public key" }),
  signature: Type.String({ minLength: 1, maxLength: 256, description: 'Ed25519 signature over `statement`, base64url (64 bytes)' }),
}, { additionalProperties: false });

export const RevokeApprovalBody = Type.Object({
  approval_request_id: ApprovalRequestId,
  reason: Type.Optional(Reason),
}, { additionalProperties: false });

export const ApprovalKeyView = Type.Object({
  id: ApprovalKeyId,
  principal_id: Type.String(),
  public_key: Type.String({ description: 'Raw 32-byte Ed25519 public key, base64url' }),
  name: Nullable(Type.String()),
  status: Type.Union([Type.Literal('live'), Type.Literal('retired')]),
  created_at: Timestamp,
  created_by: Type.String(),
  retired_at: Nullable(Timestamp),
  retired_by: Nullable(Type.String()),
});

export const Jwk = Type.Object({
  kty: Type.String({ maxLength: 16 }),
  crv: Type.String({ maxLength: 16 }),
  x: Type.String({ maxLength: 128 }),
}, { additionalProperties: true, maxProperties: 16, description: 'Ed25519 public JWK (RFC 8037); a private member d is refused, and so are an alg, use or key_ops that do not declare an EdDSA verification key' });

export const RegisterApprovalKeyBody = Type.Object({
  public_key: Type.Union([Type.String({ minLength: 1, maxLength: 128, description: 'Raw 32 bytes, base64url' }), Jwk]),
  name: Type.Optional(oneLineText(100, 'A name for the key, shown in lists')),
}, { additionalProperties: false });

export const PrincipalParams = Type.Object({ projectId: ProjectParams.properties.projectId, principalId: PrincipalId }, { additionalProperties: false });
export const ApprovalKeyParams = Type.Object({ projectId: ProjectParams.properties.projectId, keyId: ApprovalKeyId }, { additionalProperties: false });
export const ApprovalParams = Type.Object({
  projectId: ProjectParams.properties.projectId,
  approvalId: Type.String({ pattern: '^(apr|apv)_[0-9a-z]{26}$', description: 'An approval request id (apr_) or an approval id (apv_)' }),
}, { additionalProperties: false });
