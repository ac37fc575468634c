// Validates a submitted policy document at the HTTP edge: every error at once, each pointer
// prefixed by where the document sits in the request body (`/policy`).
import { validatePolicy, type PolicyDocument } from '../../domain/policy/index.ts';
import { invalidRequest } from '../../http/problem.ts';

export function requireValidPolicy(doc: unknown, at = '/policy'): PolicyDocument {
  const result = validatePolicy(doc);
  if (result.ok) return result.policy;
  throw invalidRequest(
    result.errors.map((e) => ({ pointer: `${at}${e.pointer}`, code: e.code, message: e.message })),
    `the policy document is not valid: ${result.errors.length} error${result.errors.length === 1 ? '' : 's'}; see errors`,
  );
}
