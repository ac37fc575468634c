import { Type } from 'typebox';
import { Money, Nullable, Timestamp } from './common.ts';
import { ACTION_PATTERN } from '../../domain/policy/formats.ts';
import { AgentDid } from './agents.ts';
import { MAX_RESOURCE_PATTERN_LENGTH } from '../../domain/permit/index.ts';

export const Commitment = Type.String({ pattern: '^[0-9a-f]{64}$', description: 'permit_commitment: SHA-256 (hex) of the permit' });

export const IssuePermitBody = Type.Object({
  agent: AgentDid,
  actions: Type.Array(Type.String({ minLength: 1, maxLength: 64, pattern: ACTION_PATTERN, description: '1 to 64 printable ASCII characters, no spaces; "*" alone for any action' }), { minItems: 1, maxItems: 64, description: 'Action names, or "*"' }),
  resources: Type.Array(Type.String({ minLength: 12, maxLength: MAX_RESOURCE_PATTERN_LENGTH, pattern: '^resource://', description: 'resource://<path>, a trailing * matching any remainder' }), { minItems: 1, maxItems: 64, description: 'resource:// patterns; a trailing * matches any remainder' }),
  max_per_request: Type.Optional(Money),
  budget: Type.Optional(Money),
  max_uses: Type.Optional(Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER })),
  not_before: Type.Optional(Type.String({ format: 'date-time', description: 'RFC 3339 date-time with a time zone, e.g. 2030-01-01T00:00:00Z or 2030-01-01T01:00:00+01:00 (T and Z uppercase, no leap second; a fraction rounds up to the next whole second); before it the permit does not verify yet' })),
  expires_at: Type.String({ format: 'date-time', description: 'RFC 3339 date-time with a time zone, e.g. 2030-01-01T00:00:00Z or 2030-01-01T01:00:00+01:00 (T and Z uppercase, no leap second; a fraction is dropped); from it on the permit no longer verifies' }),
}, { additionalProperties: false });

export const PermitView = Type.Object({
  commitment: Commitment,
  agent: Type.String(),
  parent: Type.Union([Type.String(), Type.Null()]),
  claims: Type.Object({}, { additionalProperties: true }),
  issued_by: Type.String(),
  created_at: Timestamp,
  expires_at: Timestamp,
  revoked_at: Nullable(Timestamp),
  revoked_by: Type.Union([Type.String(), Type.Null()]),
  revoked_via: Type.Union([Commitment, Type.Null()], { description: 'Set when the permit is revoked through an ancestor it was delegated from: that ancestor\'s commitment (revoked_at and revoked_by are then the ancestor\'s)' }),
  status: Type.Union([Type.Literal('active'), Type.Literal('not_yet_valid'), Type.Literal('revoked'), Type.Literal('expired')], { description: 'not_yet_valid: before not_before, when every decision refuses the permit' }),
  usage: Type.Object({
    uses: Type.Integer({ minimum: 0, description: 'Decisions that allowed through this link (a delegate\'s count on its ancestors too)' }),
    spent_minor: Type.Integer({ minimum: 0, description: 'Amount spent so far, in minor units of `currency`' }),
    currency: Type.Union([Type.String(), Type.Null()], { description: 'The currency of the permit\'s money limits (claims.gavel.budget, max_per_request), from its issuance on; null for a permit that limits no money' }),
  }, { description: 'What allowed decisions have spent, counted where the chain carries a budget or a use count (else zero); the limits themselves are in claims.gavel' }),
});
