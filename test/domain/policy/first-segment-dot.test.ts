// A first segment is refused for a trailing dot (`files.`: the same host to an RFC 3986 reader,
// docs/policy-language.md), not for a dot followed by an escape: `docs.%C3%A9t%C3%A9` ends in "été"
// and `v1.%E2%82%AC` in "€", and each was refused in requests, policies and permit patterns alike
// (the escapes were cut before the dot was looked for: differential policy audit, session 53).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { validatePolicy } from '../../../src/domain/policy/index.ts';
import { isRequestResource, isRequestPattern } from '../../../src/domain/policy/formats.ts';

test('a dot before an escape in the first segment is not a trailing dot; a trailing dot still is', () => {
  for (const ok of ['resource://docs.%C3%A9t%C3%A9/x', 'resource://v1.%E2%82%AC', 'resource://a.%20b/c']) {
    assert.equal(isRequestResource(ok), true, ok);
  }
  assert.equal(isRequestPattern('resource://docs.%C3%A9t%C3%A9/*'), true);
  const v = validatePolicy({ spec_version: '1', rules: [{ id: 'r', effect: 'DENY', when: { op: 'eq', input: 'resource', value: 'resource://docs.%C3%A9t%C3%A9/x' } }] }, { submitted: true });
  assert.equal(v.ok, true, JSON.stringify(v));
  for (const bad of ['resource://files./a', 'resource://files.', 'resource://caf%C3%A9./a', 'resource://Docs.%C3%A9/x']) assert.equal(isRequestResource(bad), false, bad);
});
