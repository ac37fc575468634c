// Validates a submitted policy document at the HTTP edge: every error at once, each pointer
// prefixed by where the document sits in the request body (`/policy`).
import { validatePolicy, type PolicyDocument } from '../../domain/policy/index.ts';
import { invalidRequest, type FieldError } from '../../http/problem.ts';

export function requireValidPolicy(doc: unknown, at = '/policy'): PolicyDocument {
  const result = validatePolicy(doc, { submitted: true });
  if (result.ok) return result.policy;
  throw invalidRequest(located(result.errors, at),
    `the policy document is not valid: ${result.errors.length} error${result.errors.length === 1 ? '' : 's'}; see errors`);
}

/** The document's errors, located in the request body (none when it is valid). */
export function policyErrors(doc: unknown, at = '/policy'): FieldError[] {
  const result = validatePolicy(doc, { submitted: true });
  return result.ok ? [] : located(result.errors, at);
}

const located = (errors: readonly { pointer: string; code: string; message: string }[], at: string): FieldError[] =>
  errors.map((e) => ({ pointer: `${at}${e.pointer}`, code: e.code, message: e.message }));
