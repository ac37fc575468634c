// A person's name and password rules as located field errors, for the routes that take them
// (POST /v1/console/register, POST /v1/projects/{projectId}/principals), beside the body schema's.
import { nameProblem, normalizeName } from '../domain/access/names.ts';
import { passwordProblem } from '../domain/access/password-rule.ts';
import type { FieldError } from './problem.ts';

/**
 * The name and password rules, on the members the body schema let through: a person's (`person`)
 * password is checked against the name when that is readable too.
 */
export function credentialErrors(body: Record<string, unknown>, failed: (pointer: string) => boolean, person: boolean): FieldError[] {
  const errors: FieldError[] = [];
  const name = typeof body.name === 'string' && !failed('/name') ? normalizeName(body.name) : undefined;
  const np = name === undefined ? null : nameProblem(name);
  if (np) errors.push({ pointer: '/name', ...np });
  if (person && typeof body.password === 'string' && !failed('/password')) {
    const pp = passwordProblem(body.password, name ?? '');
    if (pp) errors.push({ pointer: '/password', ...pp });
  }
  return errors;
}
