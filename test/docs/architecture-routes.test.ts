// docs/architecture.md, "What of the spec is built", counts the spec's routes the service serves and
// names those it does not and those it serves beyond the spec: held here against the spec's own
// route lists and the OpenAPI document the app produces, so that a route built (or added) changes the
// doc with it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { backends } from '../support/backends.ts';
import { startService } from '../support/service.ts';

const spec = readFileSync('docs/spec/agent-authorization-service.md', 'utf8');
const architecture = readFileSync('docs/architecture.md', 'utf8');
const section = (text: string, from: string, to: string) => text.slice(text.indexOf(from), text.indexOf(to, text.indexOf(from)));

/** "METHOD /path" of every route the spec lists: its tables (4.1-4.5), the network views (4.6, all GET) and 4.7's lists. */
function specRoutes(): string[] {
  const routes = [...section(spec, '## 4. Endpoints', '### 4.6').matchAll(/^\| (GET|POST|PUT|PATCH|DELETE) \| ([^ |]+) \|/gm)]
    .map((m) => `${m[1]} ${m[2]!.replace('{base_url}', '')}`);
  routes.push(...[...section(spec, '### 4.6', '### 4.7').matchAll(/^\| (\/v1\/[^ |]+) \|/gm)].map((m) => `GET ${m[1]}`));
  const listed = section(spec, '### 4.7', '## 5.');
  const base = '/v1/console/projects/{projectId}/';
  const line = (head: string) => listed.split('\n').find((l) => l.startsWith(head))!;
  const [gets, alsoGets] = line('GET (').split(' unless stated: ')[1]!.split('. Also ') as [string, string];
  const [absolute, relative] = line('POST (').replace(/^POST \(\d+\): /, '').split('; and under /v1/console/projects/{projectId}/: ') as [string, string];
  const byMethod: Record<string, string[]> = {
    GET: [...gets.split('; ').map((p) => `GET ${base}${p}`), ...alsoGets.replace(/\.$/, '').split(' and ')],
    POST: [...absolute.split('; ').map((p) => `POST ${p}`), ...relative.replace(/\.$/, '').split('; ').map((p) => `POST ${base}${p}`)],
    PUT: [...line('PUT (').matchAll(/(\/v1\/\S+?)(?: and|\.?$)/g)].map((m) => `PUT ${m[1]}`),
  };
  // 4.7 states its own counts: the reading above must find each list whole.
  for (const [method, list] of Object.entries(byMethod)) {
    assert.equal(list.length, Number(new RegExp(`^${method} \\((\\d+)\\)`, 'm').exec(listed)![1]), `4.7's ${method} routes`);
    assert.ok(list.every((r) => /^[A-Z]+ \/v1\/[\w{}/-]+$/.test(r)), `4.7's ${method} routes read as paths: ${list.join(', ')}`);
    routes.push(...list);
  }
  return routes;
}

const shape = (route: string) => route.replace(/\{[^}]+\}/g, '{}');

test('the counts and groups of "What of the spec is built" are those of the spec and the served OpenAPI document', async () => {
  const svc = await startService(backends()[0]!);
  let served: Set<string>;
  try {
    const doc = (await svc.app.inject({ method: 'GET', url: '/openapi.json' })).json() as { paths: Record<string, object> };
    served = new Set(Object.entries(doc.paths).flatMap(([path, item]) => Object.keys(item).map((m) => shape(`${m.toUpperCase()} ${path}`))));
  } finally { await svc.stop(); }
  const routes = specRoutes();
  assert.equal(new Set(routes.map(shape)).size, routes.length, 'each spec route read once');
  const built = routes.filter((r) => served.has(shape(r)));
  const missing = routes.filter((r) => !served.has(shape(r)));

  const claim = /(\d+) of the spec's (\d+) routes[^]*?answers the other (\d+) with 404/.exec(architecture);
  assert.ok(claim, 'docs/architecture.md states the counts');
  assert.deepEqual(claim.slice(1).map(Number), [built.length, routes.length, missing.length]);
  assert.ok(readFileSync('README.md', 'utf8').includes(`(${routes.length} routes;`), 'the README gives the spec\'s route count');

  // Each group the doc names, with the number of routes it gives it (or names them one by one: the
  // count after the path pattern); together they are every route not served.
  const groups: [RegExp, RegExp, number?][] = [
    [/chain signing \(spec 4\.4, (\d+) routes/, /\/(chain-key|assets|asset-intents)\b/],
    [/treasury \(4\.5, (\d+) routes\)/, /\{projectId\}\/treasury(\/|$)/],
    [/network views \(4\.6, (\d+) routes\)/, /\{projectId\}\/network(\/|$)/],
    [/WebAuthn credential routes \(`\/v1\/console\/webauthn\/…`, (\d+) routes\)/, /\/v1\/console\/webauthn\//],
    [/passkeys: the approval ceremony \(`approvals\/\{id\}\/challenge`, `approvals\/challenges\/\{id\}\/complete`\)/, /\/approvals\/(\{[^}]+\}\/challenge|challenges\/)/, 2],
    [/`POST \/v1\/organizations\/policy-signing-key`/, /^POST \/v1\/organizations\/policy-signing-key$/, 1],
  ];
  const grouped = new Set<string>();
  for (const [stated, paths, named] of groups) {
    const m = stated.exec(architecture);
    assert.ok(m, `docs/architecture.md names ${stated}`);
    const members = missing.filter((r) => paths.test(r));
    assert.equal(members.length, named ?? Number(m[1]), `${stated}`);
    for (const r of members) grouped.add(r);
  }
  assert.deepEqual(missing.filter((r) => !grouped.has(r)), [], 'every route not served is in a group the doc names');

  // Beyond the spec: the system routes, the audit log's list, log and consistency routes (machine plane), replay on both planes.
  const inSpec = new Set(routes.map(shape));
  assert.deepEqual([...served].filter((r) => !inSpec.has(r)).sort(), [
    'GET /healthz', 'GET /openapi.json', 'GET /readyz',
    'GET /v1/projects/{}/audit', 'GET /v1/projects/{}/audit/consistency', 'GET /v1/projects/{}/audit/log',
    'POST /v1/console/projects/{}/policy/replay', 'POST /v1/projects/{}/policy/replay',
  ].sort());
  assert.match(architecture, /Beyond the spec the service serves `GET \/healthz`, `GET \/readyz`, `GET \/openapi\.json`, the audit\s+log's list, log and consistency routes on the machine plane, and policy replay on both planes\./);
});
