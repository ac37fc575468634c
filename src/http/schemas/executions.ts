// Wire shapes of executions (spec 2.5, 2.6).
import { Type } from 'typebox';
import { multiLineText, PageCursor, PageLimit, pageLimit } from './common.ts';

export const ExecutionStatus = Type.Union([Type.Literal('IN_FLIGHT'), Type.Literal('SUCCEEDED'), Type.Literal('FAILED'), Type.Literal('UNKNOWN')],
  { description: 'IN_FLIGHT while the merchant call is under way; UNKNOWN means it may or may not have happened' });

export const ExecutionSummary = Type.Object({
  id: Type.String(),
  status: ExecutionStatus,
  agent: Type.String(),
  operation: Type.String(),
  created_at: Type.String({ description: 'RFC 3339 timestamp' }),
});

export const ExecutionList = Type.Object({
  executions: Type.Array(ExecutionSummary),
  next_cursor: Type.Union([Type.String(), Type.Null()]),
});

export const Outcome = Type.Union([Type.Literal('SUCCEEDED'), Type.Literal('FAILED')]);
// The note is the record of what a person checked, read by whoever audits the resolution.
export const Note = multiLineText(2000, 'What was checked to settle the outcome');
export const ExecutionId = Type.String({ pattern: '^exe_[0-9a-z]{26}$' });

export const MachineResolveBody = Type.Object({ execution_id: ExecutionId, outcome: Outcome, note: Note }, { additionalProperties: false });
// The executions issue gives both resolve routes the body {execution_id, outcome, note} (spec 2.6): the
// console's may carry execution_id too, and it must then name the execution of the path.
export const ConsoleResolveBody = Type.Object({
  execution_id: Type.Optional({ ...ExecutionId, description: 'Optional (spec 2.6): when sent, it must be the executionId of the path' }),
  outcome: Outcome, note: Note,
}, { additionalProperties: false });

export const Resolved = Type.Object({
  id: Type.String(),
  status: Outcome,
  resolved_at: Type.String(),
  resolved_by: Type.String(),
  note: Type.String(),
});

/** Query strings arrive as text and the service does not coerce types, so limit is a decimal string. */
export const ExecutionStatusFilter = Type.Union([Type.Literal('IN_FLIGHT'), Type.Literal('SUCCEEDED'), Type.Literal('FAILED'), Type.Literal('UNKNOWN')],
  { description: 'Only executions in this status (UNKNOWN: those waiting for a person to resolve them)' });
export const ExecutionPageQuery = Type.Object({
  status: Type.Optional(ExecutionStatusFilter),
  cursor: Type.Optional(PageCursor),
  limit: Type.Optional(PageLimit),
}, { additionalProperties: false });
export const pageOf = (q: { cursor?: string; limit?: string; status?: string }) => ({ cursor: q.cursor, limit: pageLimit(q.limit), status: q.status });
