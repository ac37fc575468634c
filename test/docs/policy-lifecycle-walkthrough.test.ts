// docs/policy-lifecycle.md walked for real: docs/policy-language.md's example document is saved,
// activated, simulated with that page's example request and replayed against a decision it made,
// and every answer has exactly the members the routes table (and the replay report) shows.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { issue, newAgent } from '../support/authorize.ts';
import { backends } from '../support/backends.ts';
import { startService } from '../support/service.ts';

const page = readFileSync('docs/policy-lifecycle.md', 'utf8');
const language = readFileSync('docs/policy-language.md', 'utf8');
const policy = JSON.parse(/```json\n([\s\S]*?)```/.exec(language)![1]!);

/** The top-level member names of the first `{…}` in `cell`: `{items: [a…], next_cursor}` is items, next_cursor. */
function members(cell: string): string[] {
  const start = cell.indexOf('{');
  const names: string[] = [];
  let depth = 0, item = '';
  for (const c of cell.slice(start + 1)) {
    if (depth === 0 && (c === ',' || c === '}')) { names.push(item.trim().split(/[:\s]/)[0]!); item = ''; if (c === '}') break; continue; }
    if ('{['.includes(c)) depth++;
    if ('}]'.includes(c)) depth--;
    item += c;
  }
  return names.sort();
}

/** The Success cell of the routes table's row for `route` (`PUT /policy`). */
function success(route: string): string {
  const row = page.split('\n').find((l) => l.startsWith(`| \`${route}`));
  assert.ok(row, `the table has ${route}`);
  return row.split(' | ').at(-1)!;
}

/** The member names of `value` and of the objects in it, by path: what the report example fixes. */
function shape(value: unknown, path = ''): string[] {
  if (Array.isArray(value)) return value.length ? shape(value[0], `${path}[]`) : [];
  if (value === null || typeof value !== 'object') return [];
  // skipped and transitions are keyed by reason codes and transitions, data rather than members.
  if (/^\.(skipped|transitions)$/.test(path)) return [path];
  return Object.entries(value).flatMap(([k, v]) => [`${path}.${k}`, ...shape(v, `${path}.${k}`)]).sort();
}

for (const backend of backends()) {
  test(`docs/policy-lifecycle.md: save, activate, simulate and replay answer with the members the page shows (${backend.name})`, async () => {
    const svc = await startService(backend);
    try {
      const P = svc.projectId;
      const author = await svc.keyHeader(['POLICY_AUTHOR']);
      const call = async (method: 'GET' | 'PUT' | 'POST', path: string, payload?: unknown) => {
        const res = await svc.app.inject({ method, url: `/v1/projects/${P}${path}`, headers: author, ...(payload ? { payload: payload as object } : {}) });
        assert.ok(res.statusCode < 300, `${method} ${path}: ${res.body}`);
        return res.json();
      };
      const keys = (o: object) => Object.keys(o).sort();

      assert.deepEqual(keys(await call('PUT', '/policy', { policy, note: 'the language page\'s example' })), members(success('PUT /policy')));
      assert.deepEqual(keys(await call('POST', '/policy/activate', { version: 1 })), members(success('POST /policy/activate')));
      assert.deepEqual(keys(await call('GET', '/policy')), members(success('GET /policy')));
      const versions = await call('GET', '/policy/versions');
      assert.deepEqual(keys(versions), members(success('GET /policy/versions')));
      // A version summary is the active version's view without its document.
      assert.deepEqual(keys(versions.items[0]), members(success('GET /policy')).filter((m) => m !== 'policy'));

      // The language page's result example, through the route.
      const simulated = await call('POST', '/policy/simulate', { request: { action: 'payments.create', agent: 'did:key:z6MkAlice', amount: { minor: 9000, currency: 'EUR' } } });
      assert.deepEqual(keys(simulated), members(success('POST /policy/simulate')));
      const shown = JSON.parse(/```json\n(\{ "decision"[\s\S]*?)```/.exec(language)![1]!);
      assert.deepEqual([simulated.policy_decision, simulated.policy_reason, simulated.matched_rules, simulated.steps], [shown.decision, shown.reason_code, shown.matched_rules, shown.steps]);

      // One decision under version 1, then a candidate that sends it to a person, as the report example does.
      const agent = newAgent();
      const { jws } = await issue(svc, agent.did, { actions: ['payments.create'], resources: ['resource://payments/*'] });
      const decided = await svc.app.inject({ method: 'POST', url: '/v1/authorize', headers: await svc.keyHeader([]), payload: { agent: agent.did, permit: jws, action: 'payments.create', resource: 'resource://payments/eu/1', amount: { minor: 500, currency: 'EUR' } } });
      assert.equal(decided.json().decision, 'ALLOW', decided.body);
      await call('PUT', '/policy', { note: 'all to a person', policy: { spec_version: '1', rules: [{ id: 'big-payments', effect: 'REQUIRE_APPROVAL', when: { op: 'eq', input: 'action', value: 'payments.create' } }] } });
      const report = await call('POST', '/policy/replay', { version: 2 });
      const example = JSON.parse(/The report:\n\n```json\n([\s\S]*?)```/.exec(page)![1]!);
      assert.deepEqual(shape(report), shape(example));
      assert.deepEqual(report.transitions, { 'ALLOW->REQUIRE_APPROVAL': 1 });
      // The example's counts add up as a real report's do.
      for (const r of [report, example]) {
        assert.equal(r.considered, r.evaluated + Object.values(r.skipped as Record<string, number>).reduce((a, b) => a + b, 0));
        assert.equal(r.evaluated, r.unchanged + r.changed);
      }
    } finally { await svc.stop(); }
  });
}
