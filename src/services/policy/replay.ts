// Replay simulation: re-evaluates a candidate policy against the inputs of recorded decisions and
// reports which would change. Only decisions the policy decided are compared (their reason code
// is a policy reason, or approval_granted: the policy asked for the approval given); a decision taken elsewhere (frozen agent, invalid permit, a replayed nonce)
// would stand whatever the policy says, so it is counted as skipped. Reads only; audits nothing.
// A decision is recorded once, as its audit event (migration 0604): replay reads the inputs from the
// events' data, newest first by id (ids are time-ordered), through the (project_id, id) index, the
// window bounding the range of ids it walks.
import { compilePolicy, evaluate, policyHash, POLICY_REASONS, type CompiledPolicy, type PolicyInput } from '../../domain/policy/index.ts';
import { parseTimestamp } from '../../domain/policy/index.ts';
import { invalidRequest, Problem, retryLater, type FieldError } from '../../http/problem.ts';
import type { Db } from '../../store/store.ts';
import type { DecisionEventData } from '../../domain/decision/event.ts';
import { compiledVersion, PolicyIntegrityError } from './active.ts';
import { DECISION_REASONS } from '../../domain/decision/combine.ts';
import { policyErrors, requireValidPolicy } from './document.ts';
import { readVersion } from './read.ts';
import { storedEventData } from '../auditlog/proofs.ts';
import { rootPermits } from '../permits/permits.ts';
import { FIRST_ISO_INSTANT, LAST_ISO_INSTANT } from '../../lib/time.ts';
import { auditIdRange } from '../audit/window.ts';
import { setImmediate as nextTurn } from 'node:timers/promises';

/** Longest stretch of replay evaluation between two turns of the event loop. */
const REPLAY_SLICE_MS = 5;

export const REPLAY_MAX = 10_000;
export const REPLAY_DEFAULT = 1_000;
export const REPLAY_SAMPLES = 20;
/**
 * Replays one process runs at once. Each holds its window while it evaluates (up to 10,000 events,
 * their stored text and parsed data) and yields every few ms, so replays asked together all held
 * theirs: sixteen from one AUDITOR key ran the served 256 MB heap out. One more is refused 503
 * `busy` with a Retry-After, before it reads anything (its body was parsed already).
 */
export const RUNNING_REPLAYS_MAX = 2;
let runningReplays = 0;

const POLICY_REASON_SET: ReadonlySet<string> = new Set(Object.values(POLICY_REASONS));

export interface ReplayRequest {
  version?: number;
  policy?: unknown;
  last?: number;
  from?: string;
  until?: string;
}

export interface ReplaySample {
  decision_id: string;
  request_id: string;
  created_at: string;
  inputs: {
    agent: string; action: string; resource: string; amount: { minor: number; currency: string } | null;
    delegation_depth: number; permit_commitment: string | null; root_permit_commitment: string | null; request_time: string;
  };
  old: { decision: string; reason_code: string; policy_version: number | null; matched_rules: unknown };
  new: { decision: string; reason_code: string; matched_rules: string[] };
}

export interface ReplayResult {
  candidate: { version: number | null; hash: string };
  window: { from: string | null; until: string | null; last: number };
  /** Decisions read from the window. */
  considered: number;
  /** Decisions re-evaluated (decided by the policy). */
  evaluated: number;
  unchanged: number;
  changed: number;
  /** Decisions not decided by the policy, by reason code. */
  skipped: Record<string, number>;
  /** "OLD->NEW": count, for changed decisions only. */
  transitions: Record<string, number>;
  samples: ReplaySample[];
}

function eventInput(d: DecisionEventData, roots: ReadonlyMap<string, string>): PolicyInput {
  const time = parseTimestamp(d.request_time);
  return {
    agent: d.agent, action: d.action, resource: d.resource,
    delegation_depth: Number(d.delegation_depth),
    ...(d.amount ? { amount: { minor: Number(d.amount.minor), currency: d.amount.currency } } : {}),
    ...(d.permit_commitment !== null ? { permit_commitment: d.permit_commitment } : {}),
    ...(d.permit_commitment !== null && roots.has(d.permit_commitment) ? { root_permit_commitment: roots.get(d.permit_commitment)! } : {}),
    ...(time !== null ? { request_time: time } : {}),
  };
}

/**
 * A window bound as the service writes instants (UTC, milliseconds), the form it selected rows by;
 * one an offset carries past year 9999 or before year 0 has no such form and is echoed as sent.
 */
const echoed = (sent: string | undefined, ms: number | null | undefined): string | null =>
  sent === undefined ? null : typeof ms === 'number' && ms >= FIRST_ISO_INSTANT && ms <= LAST_ISO_INSTANT ? new Date(ms).toISOString() : sent;

/** A replay names exactly one candidate: a saved version or a document. Safe on any body. */
export function replayCandidateErrors(body: { version?: unknown; policy?: unknown }): FieldError[] {
  return (body.version === undefined) === (body.policy === undefined)
    ? [{ pointer: '', code: 'candidate_required', message: 'give exactly one of version (a saved version) or policy (a document)' }]
    : [];
}

export async function replayPolicy(db: Db, projectId: string, body: ReplayRequest): Promise<ReplayResult> {
  const errors = replayCandidateErrors(body);
  // RFC 3339 as the policy engine reads it (at most millisecond precision).
  const from = body.from === undefined ? undefined : parseTimestamp(body.from);
  const until = body.until === undefined ? undefined : parseTimestamp(body.until);
  if (from === null) errors.push({ pointer: '/from', code: 'invalid_timestamp', message: 'expected an RFC 3339 timestamp with at most millisecond precision' });
  if (until === null) errors.push({ pointer: '/until', code: 'invalid_timestamp', message: 'expected an RFC 3339 timestamp with at most millisecond precision' });
  if (typeof from === 'number' && typeof until === 'number' && from >= until) {
    errors.push({ pointer: '/until', code: 'invalid_range', message: 'until must be later than from' });
  }
  // Every error at once: a submitted document's own come with the window's.
  if (errors.length > 0) throw invalidRequest([...errors, ...(body.policy === undefined ? [] : policyErrors(body.policy))]);
  if (runningReplays >= RUNNING_REPLAYS_MAX) throw retryLater(503, 'busy', `${RUNNING_REPLAYS_MAX} replays are running in this instance, the most it runs at once; retry`, 1);
  runningReplays++;
  try {
    return await replayWindow(db, projectId, body, from ?? undefined, until ?? undefined);
  } finally {
    runningReplays--;
  }
}

/** The replay itself, once its window is valid and it has its turn. */
async function replayWindow(db: Db, projectId: string, body: ReplayRequest, from: number | undefined, until: number | undefined): Promise<ReplayResult> {
  let compiled: CompiledPolicy | null;
  let candidate: ReplayResult['candidate'];
  if (body.policy !== undefined) {
    const policy = requireValidPolicy(body.policy);
    compiled = compilePolicy(policy);
    candidate = { version: null, hash: policyHash(policy) };
  } else {
    const stored = await readVersion(db, projectId, body.version as number);
    compiled = await compiledVersion(db, projectId, stored.version, stored.hash).catch((error: unknown) => {
      if (!(error instanceof PolicyIntegrityError)) throw error;
      throw new Problem(500, 'policy_integrity', `stored policy version ${stored.version} no longer matches what was saved (its stored document does not parse, validate or match its hash), so it cannot be replayed; save the document again as a new version`);
    });
    candidate = { version: stored.version, hash: stored.hash };
  }
  if (compiled === null) throw new Error('a stored policy version vanished while replaying');

  const last = body.last ?? REPLAY_DEFAULT;
  let q = db.selectFrom('audit_events').select(['id', 'created_at', 'data']).where('project_id', '=', projectId).where('kind', '=', 'decision');
  // created_at is text compared as text: an instant past year 9999 (an offset can put it there) has a
  // signed six-digit ISO year that sorts before every stored one, so it bounds nothing or everything.
  if (typeof from === 'number') q = q.where('created_at', '>=', new Date(from).toISOString());
  if (typeof until === 'number' && until <= LAST_ISO_INSTANT) q = q.where('created_at', '<', new Date(until).toISOString());
  // The window as a range of ids too: the walk newest first starts at `until`, not at the newest
  // event, and stops at `from`, not at the project's first (audit/window.ts).
  const ids = auditIdRange(typeof from === 'number' ? from : undefined, typeof until === 'number' ? until : undefined);
  if (ids.lowest !== undefined) q = q.where('id', '>=', ids.lowest);
  if (ids.below !== undefined) q = q.where('id', '<', ids.below);
  // The stored texts are dropped as they are read: only the parsed data is kept while evaluating.
  const rows = (typeof from === 'number' && from > LAST_ISO_INSTANT ? [] : await q.orderBy('id', 'desc').limit(last).execute())
    .map((e) => ({ created_at: e.created_at, ...(storedEventData(e.id, e.data) as DecisionEventData) }));

  const roots = await rootPermits(db, projectId, rows.flatMap((r) => (r.permit_commitment === null ? [] : [r.permit_commitment])));
  const result: ReplayResult = {
    candidate, window: { from: echoed(body.from, from), until: echoed(body.until, until), last },
    considered: rows.length, evaluated: 0, unchanged: 0, changed: 0, skipped: {}, transitions: {}, samples: [],
  };
  // Up to 10,000 evaluations of a policy that may hold 10,000 rules: seconds of work, which must
  // not hold up the decisions this thread answers. It gives the event loop a turn every few ms.
  let slice = performance.now();
  for (const row of rows) {
    if (performance.now() - slice > REPLAY_SLICE_MS) {
      await nextTurn();
      slice = performance.now();
    }
    // An approved request was decided by the policy too: it asked for approval, and a person gave it.
    // An approval grants no authority (spec 4.1.5), so the candidate decides it again: a DENY denies
    // it; REQUIRE_APPROVAL (the approval given) or ALLOW lets it stand as the ALLOW it was.
    const approved = row.reason_code === DECISION_REASONS.approvalGranted;
    if (!approved && !POLICY_REASON_SET.has(row.reason_code)) {
      result.skipped[row.reason_code] = (result.skipped[row.reason_code] ?? 0) + 1;
      continue;
    }
    result.evaluated++;
    const r = evaluate(compiled, eventInput(row, roots));
    const decision = approved && r.decision !== 'DENY' ? 'ALLOW' : r.decision;
    if (decision === row.decision) { result.unchanged++; continue; }
    result.changed++;
    const transition = `${row.decision}->${decision}`;
    result.transitions[transition] = (result.transitions[transition] ?? 0) + 1;
    if (result.samples.length < REPLAY_SAMPLES) {
      result.samples.push({
        decision_id: row.decision_id, request_id: row.request_id, created_at: row.created_at,
        inputs: {
          agent: row.agent, action: row.action, resource: row.resource,
          amount: row.amount ? { minor: Number(row.amount.minor), currency: row.amount.currency } : null,
          delegation_depth: Number(row.delegation_depth), permit_commitment: row.permit_commitment,
          root_permit_commitment: row.permit_commitment === null ? null : roots.get(row.permit_commitment) ?? null, request_time: row.request_time,
        },
        old: { decision: row.decision, reason_code: row.reason_code, policy_version: row.policy_version === null ? null : Number(row.policy_version), matched_rules: row.matched_rules },
        new: { decision: r.decision, reason_code: r.reason_code, matched_rules: r.matched_rules },
      });
    }
  }
  return result;
}

