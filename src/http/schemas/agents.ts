import { Type } from 'typebox';
import { DID_PATTERN } from '../../domain/permit/did.ts';
import { Nullable, Reason, Timestamp } from './common.ts';

const AGENT_DID = { minLength: 7, maxLength: 512, pattern: DID_PATTERN, description: 'an agent DID: did:<method>:<method-specific id> (W3C DID syntax; a percent escape in uppercase hex, and none for a letter, digit, ".", "-" or "_": one spelling for one DID)' };
export const AgentDid = Type.String(AGENT_DID);
/**
 * The same as a path segment. A `%` the DID holds must be sent as `%25` (as encodeURIComponent
 * does), or the segment decodes to another DID: `did:web:a.example%3A8080` sent as is names
 * `did:web:a.example:8080`.
 */
export const AgentDidSegment = Type.String({ ...AGENT_DID, description: `${AGENT_DID.description}, percent-encoded as one path segment (as encodeURIComponent does): a \`%\` in the DID is sent as \`%25\`` });

export const AgentState = Type.Object({
  agent: AgentDid,
  frozen: Type.Boolean(),
  frozen_at: Nullable(Timestamp, { description: 'Since when the agent is frozen' }),
  frozen_by: Type.Union([Type.String(), Type.Null()], { description: 'Who froze it (principal or API key id)' }),
  reason: Type.Union([Type.String(), Type.Null()]),
  released_at: Nullable(Timestamp, { description: 'Since when the agent is no longer frozen (null while frozen, or if it never was)' }),
  released_by: Type.Union([Type.String(), Type.Null()], { description: 'Who released it (principal or API key id)' }),
});

/** A freeze's own refusal: the first freeze stands, and the problem says whose it is. */
export const FREEZE_CONFLICT = { 409: { what: 'The agent is already frozen and that freeze stands: the problem\'s `state` member is the agent\'s state (who froze it, since when and why)', codes: ['agent_already_frozen'] } };

/**
 * What a freeze, release or revocation may answer besides the route's own codes: on PostgreSQL it
 * waits a bounded time for the lock that puts it ahead of decisions (services/agents/agents.ts, queueAheadOfDecisions).
 */
export const QUEUE_AHEAD_BUSY = { 503: { what: 'Temporarily unavailable; retry after `retry-after`: on PostgreSQL, a lock this change waits for (an agent\'s row, which another session of the database, such as an operator\'s open transaction, may hold) stayed held for longer than it waits (`busy`, nothing was changed), the service has begun to stop (`shutting_down`), the database does not answer (`database_unavailable`) or its disk is full (`storage_full`)', codes: ['busy'] } };

export const FreezeBody = Type.Object({ agent: AgentDid, reason: Type.Optional(Reason) }, { additionalProperties: false });

/** A release may say why too; the reason is audited (agent.released), while the state clears the freeze's. */
export const ReleaseBody = Type.Object({ agent: AgentDid, reason: Type.Optional(Reason) }, { additionalProperties: false });
