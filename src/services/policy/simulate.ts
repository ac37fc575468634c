// Policy simulation: evaluates one request against the active policy or a submitted document.
// Authorizes nothing, spends no counter, writes nothing (no audit event): it only reads.
import { compilePolicy, evaluate, policyHash, type CompiledPolicy, type PolicyInput } from '../../domain/policy/index.ts';
import { isAction, isDid, isRequestResource, isSha256Hex, parseTimestamp } from '../../domain/policy/formats.ts';
import { invalidRequest, Problem, type FieldError } from '../../http/problem.ts';
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

/**
 * Turns the simulation request into evaluator input, refusing malformed members precisely
 * (the evaluator would treat them as indeterminate; a person simulating wants to know).
 */
export function simulationInput(request: SimulationRequest, now: Date, at = '/request'): PolicyInput {
  if (request.agent === undefined) {
    throw new Problem(400, 'agent_required', 'a simulation request needs request.agent (the agent DID)', {
      errors: [{ pointer: `${at}/agent`, code: 'agent_required', message: 'agent is required' }],
    });
  }
  const errors: FieldError[] = [];
  if (!isDid(request.agent)) errors.push({ pointer: `${at}/agent`, code: 'invalid_did', message: 'expected a DID (did:<method>:<id>)' });
  if (request.action !== undefined && !isAction(request.action)) errors.push({ pointer: `${at}/action`, code: 'invalid_action', message: 'expected 1-64 printable ASCII characters' });
  if (request.resource !== undefined && !isRequestResource(request.resource)) errors.push({ pointer: `${at}/resource`, code: 'invalid_resource', message: 'expected resource://<path> in its one spelling: escapes only for what it cannot hold as is, in uppercase hex (no encoded letter, digit, "/", "\\", ".", "%" or control character), a first segment in lowercase without "@" or ":", no ";" (docs/policy-language.md)' });
  for (const member of ['permit_commitment', 'root_permit_commitment'] as const) {
    if (request[member] !== undefined && !isSha256Hex(request[member])) errors.push({ pointer: `${at}/${member}`, code: 'invalid_commitment', message: 'expected a lowercase hex SHA-256 digest (64 characters)' });
  }
  let time = now.getTime();
  if (request.request_time !== undefined) {
    const parsed = parseTimestamp(request.request_time);
    if (parsed === null) errors.push({ pointer: `${at}/request_time`, code: 'invalid_timestamp', message: 'expected an RFC 3339 timestamp, e.g. 2025-01-31T09:00:00Z' });
    else time = parsed;
  }
  if (errors.length > 0) throw invalidRequest(errors);
  return {
    agent: request.agent,
    request_time: time,
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
    throw new Problem(error.status, error.code, error.detail, { errors: [...(error.errors ?? []), ...documentErrors] });
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
