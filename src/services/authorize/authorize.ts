// POST /v1/authorize, orchestrated: verify the permit (cached crypto, live time) and evaluate the
// active policy (pure) here, then hand the plan to the writer, whose transaction does the rest
// (commit.ts): the frozen check under lock, live revocation, spending, the obligation of a
// REQUIRE_APPROVAL, and the decision's audit event (its one record). A decision that would write only its
// event is prepared here instead, event and all, and the writer runs its one statement
// (one-statement.ts). The answer leaves only after the commit is durable (invariant 1).
import { checkCoverage, checkPermitTime, liveLimits, presentedCommitment, type Money, type VerifiedPermit, type VerifyResult } from '../../domain/permit/index.ts';
import { evaluate, indeterminateDetail, type PolicyResult } from '../../domain/policy/index.ts';
import type { Signer } from '../../signer/signer.ts';
import type { Store } from '../../store/store.ts';
import type { GavelWriter } from '../writer/procedures.ts';
import type { ExecutionReservation } from '../executions/reserve.ts';
import { permitKeyName, recordDelegatedLinks } from '../permits/permits.ts';
import { ActivePolicyDamaged, cachedActivePolicy, forgetActivePolicy, getActivePolicy, type ActivePolicy } from '../policy/active.ts';
import { DECISION_REASONS } from '../../domain/decision/combine.ts';
import { StaleReadEpoch, type ReadTag } from '../../store/read-epoch.ts';
import { PermitVerificationCache } from './permit-cache.ts';
import type { DecisionPlan } from './commit.ts';
import { prepareDecision } from './one-statement.ts';
import { toIso } from '../../lib/time.ts';

export interface AuthorizeInput {
  agent: string;
  permit: string;
  action: string;
  resource: string;
  amount?: Money;
  intent?: string;
  /** The obligation an approval discharged (docs/approvals.md); only this one can be consumed. */
  approval_request_id?: string;
}

export interface DecisionRecord {
  decision_id: string;
  decision: 'ALLOW' | 'DENY' | 'REQUIRE_APPROVAL';
  reason_code: string;
  detail?: string;
  policy_version: number | null;
  matched_rules: string[];
  audit_id: string;
  request_id: string;
  approval_request_id?: string;
  permit_commitment: string | null;
}

/** What the plan keeps of an evaluation; a fail-closed one also names its indeterminate rules. */
function policyOutcome(result: PolicyResult): DecisionPlan['policy'] {
  const detail = result.indeterminate_rules.length > 0 ? indeterminateDetail(result) : undefined;
  return { decision: result.decision, reason_code: result.reason_code, matched_rules: result.matched_rules, ...(detail ? { detail } : {}) };
}

/**
 * An active version damaged in storage (ActivePolicyDamaged): it evaluates nothing, and the policy
 * conjunct is a DENY `policy_integrity` under its number, so the decision fails closed, is recorded
 * like any other DENY, and a frozen agent or an invalid permit still comes first (combine.ts).
 */
interface DamagedActive { version: number; compiled: null; outcome: NonNullable<DecisionPlan['policy']> }

const failedClosed = (damaged: ActivePolicyDamaged): DamagedActive => ({
  version: damaged.version, compiled: null,
  outcome: { decision: 'DENY', reason_code: DECISION_REASONS.policyIntegrity, matched_rules: [], detail: damaged.message },
});

/** `presented`: the commitment a permit that did not verify is recorded by (presentedCommitment). */
type PermitCheck = { permit: VerifiedPermit | null; failure: { check: string; detail: string; presented?: string } | null };

const NO_DELEGATORS: string[] = [];
/** The agents a permit was delegated by, root's subject first: each link's issuer after the root. */
const delegatorsOf = (permit: VerifiedPermit): string[] => (permit.links.length > 1 ? permit.links.slice(0, -1).map((l) => l.claims.sub) : NO_DELEGATORS);

export class Authorizer {
  readonly #store: Store;
  readonly #signer: Signer;
  readonly #writer: GavelWriter;
  readonly #cache = new PermitVerificationCache();
  readonly #keys = new Map<string, Uint8Array>();

  constructor(deps: { store: Store; signer: Signer; writer: GavelWriter }) {
    this.#store = deps.store;
    this.#signer = deps.signer;
    this.#writer = deps.writer;
  }

  async #loadProjectKey(projectId: string): Promise<Uint8Array> {
    const key = await this.#signer.publicKey(permitKeyName(projectId));
    this.#keys.set(projectId, key);
    return key;
  }

  /**
   * Checks of the permit that need no store: signatures (cached), time, subject, coverage. The hot
   * path (a known project key, a permit verified before) answers at once, not through a promise.
   */
  #checkPermit(projectId: string, input: AuthorizeInput, now: Date): PermitCheck | Promise<PermitCheck> {
    const key = this.#keys.get(projectId);
    const verified = key && this.#cache.cached(input.permit, projectId, key);
    return verified ? this.#checkVerified(verified, input, now) : this.#verifyThenCheck(projectId, input, now);
  }

  async #verifyThenCheck(projectId: string, input: AuthorizeInput, now: Date): Promise<PermitCheck> {
    const key = this.#keys.get(projectId) ?? await this.#loadProjectKey(projectId);
    // verify answers from the cache itself when it can (a key loaded just now, a permit cached since).
    // A chain seen for the first time by this process: its delegated links become revocable one
    // by one (an insert that finds them recorded does nothing; a root alone writes nothing). That
    // happens before the chain is cached, since cached chains never come here: a failed insert
    // (the database away) must not leave links that decisions allow but the console cannot find.
    const verified = await this.#cache.verify(input.permit, projectId, key, (permit) => recordDelegatedLinks(this.#store.db, projectId, permit, now));
    return this.#checkVerified(verified, input, now);
  }

  #checkVerified(verified: VerifyResult, input: AuthorizeInput, now: Date): PermitCheck {
    if (!verified.ok) {
      // The detail may quote the presented text; the decision's event holds well-formed strings only,
      // so a permit that does not verify is recorded as such, never a 500 (toWellFormed: a guard).
      return { permit: null, failure: { check: verified.check, detail: `${verified.check}: ${verified.detail}`.toWellFormed(), presented: presentedCommitment(input.permit) } };
    }
    const permit = verified.permit;
    if (permit.agent !== input.agent) {
      return { permit, failure: { check: 'subject_mismatch', detail: 'subject_mismatch: the permit was granted to another agent' } };
    }
    const time = checkPermitTime(permit, now);
    if (!time.ok) return { permit, failure: { check: time.check, detail: `${time.check}: ${time.detail}` } };
    const coverage = checkCoverage(permit, { action: input.action, resource: input.resource, ...(input.amount ? { amount: input.amount } : {}) });
    if (!coverage.ok) return { permit, failure: { check: coverage.check, detail: `${coverage.check}: ${coverage.detail}` } };
    return { permit, failure: null };
  }

  /** The active policy when the cache does not hold it: read (and compiled) afresh, or found damaged. */
  async #activePolicy(projectId: string, epoch: ReadTag | undefined): Promise<ActivePolicy | DamagedActive | null> {
    try {
      return await getActivePolicy(this.#store.db, projectId, this.#store, epoch);
    } catch (error) {
      if (error instanceof ActivePolicyDamaged) return failedClosed(error);
      throw error;
    }
  }

  async decide(ctx: { projectId: string; actor: string; requestId: string; now: Date; epoch?: ReadTag | undefined }, input: AuthorizeInput, execution?: ExecutionReservation): Promise<DecisionRecord> {
    const { projectId, now } = ctx;
    const checked = this.#checkPermit(projectId, input, now);
    const { permit, failure } = checked instanceof Promise ? await checked : checked;
    const active = cachedActivePolicy(this.#store, projectId, ctx.epoch) ?? await this.#activePolicy(projectId, ctx.epoch);
    const policy = active?.compiled
      ? evaluate(active.compiled, {
        action: input.action, resource: input.resource, agent: input.agent,
        ...(input.amount ? { amount: input.amount } : {}),
        request_time: now.getTime(),
        ...(permit ? { delegation_depth: permit.delegation_depth, permit_commitment: permit.commitment, root_permit_commitment: permit.links[0]!.commitment } : {}),
      })
      : null;
    // Everything that must be read or written under the commit happens in the writer (commit.ts).
    const { permit: _jws, ...request } = input;
    const plan: DecisionPlan = {
      projectId, actor: ctx.actor, requestId: ctx.requestId, at: toIso(now), input: request, failure,
      permit: permit ? { commitment: permit.commitment, chain: permit.chain, delegation_depth: permit.delegation_depth, delegators: delegatorsOf(permit), counters: liveLimits(permit).counters } : null,
      policy: policy ? policyOutcome(policy) : active && 'outcome' in active ? active.outcome : null,
      policyVersion: active?.version ?? null,
      ...(execution ? { execution } : {}),
      ...(ctx.epoch !== undefined ? { epoch: ctx.epoch } : {}),
    };
    // Usually one statement, when the transaction would write only the event: prepared here, so
    // the writer only runs it (one-statement.ts, decisions 0012 and 0017). If a check under the
    // commit differs, it wrote nothing, and the transaction decides.
    const prepared = prepareDecision(plan);
    if (prepared && await this.#writer.call('authorize.commitPrepared', prepared.statement)) return prepared.record;
    try {
      return await this.#writer.call('authorize.commit', plan);
    } catch (error) {
      // The pointer (or the key) moved on: the caller decides again, with the pointer read afresh.
      if (error instanceof StaleReadEpoch) forgetActivePolicy(this.#store, projectId);
      throw error;
    }
  }
}
