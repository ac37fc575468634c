// The inputs a rule may read (spec 2.7), their types, and the operators each type admits.
import type { InputName, Operator } from './types.ts';

export type InputType = 'action' | 'resource' | 'did' | 'money' | 'currency' | 'timestamp' | 'integer' | 'sha256' | 'token';

export const INPUT_TYPES: Readonly<Record<InputName, InputType>> = {
  action: 'action',
  resource: 'resource',
  agent: 'did',
  'amount.minor': 'money',
  'amount.currency': 'currency',
  request_time: 'timestamp',
  delegation_depth: 'integer',
  permit_commitment: 'sha256',
  root_permit_commitment: 'sha256',
  backend_finality: 'token',
};

/**
 * Inputs named by the spec that no milestone produces yet. A rule reading one would be
 * indeterminate on every request, so validation refuses it and names the milestone.
 */
export const UNAVAILABLE_INPUTS: Readonly<Record<string, string>> = {
  risk_score: 'risk-scoring',
};

/**
 * Inputs the evaluator knows but no request carries yet: `backend_finality` comes with chain
 * signing (spec 4.4), which no deployment has. A document submitted now that reads one is refused
 * like the inputs above; a version stored before goes on validating (and such a rule stays
 * indeterminate, as it was).
 */
export const NOT_YET_SUPPLIED: Readonly<Record<string, string>> = {
  backend_finality: 'chain-signing',
};

const EQUALITY: readonly Operator[] = ['eq', 'neq', 'in', 'not_in'];
const ORDERED: readonly Operator[] = ['eq', 'neq', 'lt', 'lte', 'gt', 'gte', 'between', 'in', 'not_in'];

export const OPERATORS_BY_TYPE: Readonly<Record<InputType, ReadonlySet<Operator>>> = {
  action: new Set(EQUALITY),
  resource: new Set([...EQUALITY, 'matches_resource']),
  did: new Set(EQUALITY),
  currency: new Set(EQUALITY),
  sha256: new Set(EQUALITY),
  token: new Set(EQUALITY),
  money: new Set(ORDERED),
  integer: new Set(ORDERED),
  timestamp: new Set([...ORDERED, 'within_time_window']),
};

export const TYPE_DESCRIPTIONS: Readonly<Record<InputType, string>> = {
  action: 'an action (1-64 printable ASCII characters)',
  resource: 'a resource URI (resource://<path>)',
  did: 'a DID (did:<method>:<id>)',
  money: 'an amount in minor units (a non-negative integer, with a currency)',
  currency: 'a currency code (three uppercase letters)',
  timestamp: 'a timestamp (RFC 3339, e.g. 2025-01-31T09:00:00Z)',
  integer: 'a non-negative integer',
  sha256: 'a lowercase hex SHA-256 digest (64 characters)',
  token: 'a token (1-64 characters of A-Z a-z 0-9 . _ : -)',
};

export function isInputName(name: string): name is InputName {
  return Object.hasOwn(INPUT_TYPES, name);
}
