// Policy simulation: evaluates one request against the active policy or a submitted document.
// Authorizes nothing, spends no counter, writes nothing (no audit event): it only reads.
import { compilePolicy, evaluate, policyHash, type CompiledPolicy, type PolicyInput } from '../../domain/policy/index.ts';
import { isAction, isDid, isRequestResource, isSha256Hex, parseTimestamp } from '../../domain/policy/formats.ts';
import { invalidRequest, listedErrors, Problem, type FieldError } from '../../http/problem.ts';
import type { Db } from '../../store/store.ts';
import { ActivePolicyDamaged, getActivePolicy } from './active.ts';
import { policyErrors, requireValidPolicy } from './document.ts';
import { noActivePolicy } from './read.ts';

export interface SimulationRequest {
  agent?: string;
  action?: string;
  resource?: string;
  amount?: { minor: number; currency: string };
  request_time?: string;
  delegation_depth?: number;
  permit_commitment?: string;
  root_permit_commitment?: string;
}

export interface SimulationResult {
  policy_decision: string;
  policy_reason: string;
  /** null when the document simulated is not a saved version. */
  policy_version: number | null;
  policy_hash: string;
  matched_rules: string[];
  indeterminate_rules: string[];
  steps: number;
}

const AGENT_REQUIRED = (at: string): FieldError => ({ pointer: `${at}/agent`, code: 'agent_required', message: 'agent is required' });

/**
 * The errors of a simulation request's members beyond their JSON types, every one at once. Safe on
 * any value: a member of the wrong type (which the body schema reports) is left out here.
 */
export function simulationErrors(request: unknown, at = '/request'): FieldError[] {
  // No request at all is a simulation without its agent (spec 7): named as such, not only "required".
  if (request === undefined) return [AGENT_REQUIRED(at)];
  if (typeof request !== 'object' || request === null || Array.isArray(request)) return [];
  const r = request as Record<string, unknown>;
  const errors: FieldError[] = [];
  const malformed = (member: string, ok: (value: string) => boolean, code: string, message: string) => {
    if (typeof r[member] === 'string' && !ok(r[member])) errors.push({ pointer: `${at}/${member}`, code, message });
  };
  if (r.agent === undefined) errors.push(AGENT_REQUIRED(at));
  malformed('agent', isDid, 'invalid_did', 'expected a DID (did:<method>:<id>; percent escapes in uppercase hex, none for a letter, digit, ".", "-" or "_")');
  malformed('action', isAction, 'invalid_action', 'expected 1-64 printable ASCII characters');
  malformed('resource', isRequestResource, 'invalid_resource', 'expected resource://<path> in its one spelling: escapes only for what it cannot hold as is, in uppercase hex (no encoded letter, digit, "/", "\\", ".", "%" or control character), a first segment in lowercase without "@" or ":", no ";" (docs/policy-language.md)');
  for (const member of ['permit_commitment', 'root_permit_commitment']) {
    malformed(member, isSha256Hex, 'invalid_commitment', 'expected a lowercase hex SHA-256 digest (64 characters)');
  }
  malformed('request_time', (t) => parseTimestamp(t) !== null, 'invalid_timestamp', 'expected an RFC 3339 timestamp, e.g. 2025-01-31T09:00:00Z');
  return errors;
}

/** The refusal of a simulation without its agent, every other error listed beside it. */
export const agentRequired = (errors: FieldError[]): Problem =>
  new Problem(400, 'agent_required', 'a simulation request needs request.agent (the agent DID)', { errors: listedErrors(errors) });

/**
 * Turns the simulation request into evaluator input, refusing malformed members precisely
 * (the evaluator would treat them as indeterminate; a person simulating wants to know).
 */
export function simulationInput(request: SimulationRequest, now: Date, at = '/request'): PolicyInput {
  // Every error at once: a missing agent beside the other malformed members, not instead of them.
  const errors = simulationErrors(request, at);
  if (request.agent === undefined) throw agentRequired(errors);
  const time = request.request_time === undefined ? now.getTime() : parseTimestamp(request.request_time);
  if (errors.length > 0) throw invalidRequest(errors);
  return {
    agent: request.agent,
    request_time: time as number,
    ...(request.action !== undefined ? { action: request.action } : {}),
    ...(request.resource !== undefined ? { resource: request.resource } : {}),
    ...(request.amount !== undefined ? { amount: { minor: request.amount.minor, currency: request.amount.currency } } : {}),
    ...(request.delegation_depth !== undefined ? { delegation_depth: request.delegation_depth } : {}),
    ...(request.permit_commitment !== undefined ? { permit_commitment: request.permit_commitment } : {}),
    ...(request.root_permit_commitment !== undefined ? { root_permit_commitment: request.root_permit_commitment } : {}),
  };
}

export async function simulatePolicy(db: Db, projectId: string, body: { request: SimulationRequest; policy?: unknown }, now: Date): Promise<SimulationResult> {
  let input: PolicyInput;
  try {
    input = simulationInput(body.request, now);
  } catch (error) {
    // Every error at once: a submitted document's own errors come with the request's.
    const documentErrors = body.policy === undefined ? [] : policyErrors(body.policy);
    if (!(error instanceof Problem) || documentErrors.length === 0) throw error;
    // Capped as every invalid_request answer is (at most 100, then too_many_errors).
    const { errors } = invalidRequest([...(error.errors ?? []), ...documentErrors.filter((e) => e.code !== 'too_many_errors')]);
    throw new Problem(error.status, error.code, error.detail, { errors });
  }
  let compiled: CompiledPolicy;
  let version: number | null;
  let hash: string;
  if (body.policy !== undefined) {
    const policy = requireValidPolicy(body.policy);
    compiled = compilePolicy(policy);
    version = null;
    hash = policyHash(policy);
  } else {
    const active = await getActivePolicy(db, projectId).catch((error: unknown) => {
      // The service's own stored data is wrong, not the request: a 500 that says so (decision 0152, addendum).
      throw error instanceof ActivePolicyDamaged ? new Problem(500, 'policy_integrity', error.message) : error;
    });
    if (active === null) throw noActivePolicy();
    ({ compiled, version, hash } = active);
  }
  const r = evaluate(compiled, input);
  return {
    policy_decision: r.decision, policy_reason: r.reason_code, policy_version: version, policy_hash: hash,
    matched_rules: r.matched_rules, indeterminate_rules: r.indeterminate_rules, steps: r.steps,
  };
}
