// The members the walk-throughs of the README and docs/*.md send and read are the ones the OpenAPI
// document declares for each route. Every member read from an answer with jq (`| jq -r .secret`,
// `echo "$LOG" | jq -r .log_vkey`, `jq '{witnessed, …}' proof.json`) is one the route's success
// answer declares (real answers are held to those schemas: test/support/answer-schemas.ts); every
// body sent with -d has no member the request schema does not know, and lacks none it requires.
// A member renamed in the service, or misspelt in a doc, would otherwise give the reader `null`, or a
// 400, and a next step that fails for a reason the page does not show.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { backends } from '../support/backends.ts';
import { startService } from '../support/service.ts';
import { codeBlocks, curlCalls, filterPaths, laterReads, walkthroughPages } from '../support/walkthroughs.ts';

type Schema = { $ref?: string; type?: string | string[]; properties?: Record<string, Schema>; items?: Schema; anyOf?: Schema[]; oneOf?: Schema[]; allOf?: Schema[] };
interface Document {
  paths: Record<string, Record<string, {
    responses: Record<string, { content?: Record<string, { schema: Schema }> }>;
    requestBody?: { content: Record<string, { schema: Schema }> };
  }>>;
  components: { schemas?: Record<string, Schema> };
}

/** Whether `path` names members `schema` declares. A schema that declares no members (free-form data) admits any. */
function declares(doc: Document, schema: Schema, path: (string | number)[]): boolean {
  if (schema.$ref) return declares(doc, doc.components.schemas![schema.$ref.replace('#/components/schemas/', '')]!, path);
  if (path.length === 0) return true;
  const branches = [...schema.anyOf ?? [], ...schema.oneOf ?? [], ...schema.allOf ?? []];
  if (branches.length > 0) return branches.some((b) => declares(doc, b, path));
  const [head, ...rest] = path;
  if (typeof head === 'number') return schema.type === 'array' && schema.items !== undefined && declares(doc, schema.items, rest);
  if (!schema.properties) return schema.type === undefined || schema.type === 'object';
  const member = schema.properties[head!];
  return member !== undefined && declares(doc, member, rest);
}

async function servedDocument(): Promise<Document> {
  const svc = await startService(backends()[0]!);
  try { return (await svc.app.inject({ method: 'GET', url: '/openapi.json' })).json(); } finally { await svc.stop(); }
}

const shape = (route: string) => route.replace(/\{[^}]+\}/g, '{}');

test('every member a walk-through reads from an answer with jq is one that answer declares', async () => {
  const doc = await servedDocument();
  const successSchemas = new Map<string, Schema[]>();
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      const schemas = Object.entries(op.responses).filter(([status]) => /^2/.test(status))
        .flatMap(([, r]) => r.content?.['application/json'] ? [r.content['application/json'].schema] : []);
      successSchemas.set(shape(`${method.toUpperCase()} ${path}`), schemas);
    }
  }

  const reads: { where: string; route: string; filter: string }[] = [];
  for (const page of walkthroughPages()) {
    for (const block of codeBlocks(page)) {
      const calls = curlCalls(block);
      const byVariable = new Map(calls.filter((c) => c.assignedTo).map((c) => [c.assignedTo!, c.route]));
      const byFile = new Map(calls.filter((c) => c.savedIn).map((c) => [c.savedIn!, c.route]));
      for (const c of calls) if (c.piped) reads.push({ where: page, route: c.route, filter: c.piped });
      for (const r of laterReads(block)) {
        const route = r.variable !== undefined ? byVariable.get(r.variable) : byFile.get(r.file!);
        if (route) reads.push({ where: page, route, filter: r.filter });
      }
    }
  }
  // The walk-throughs are read: getting-started.md's own reads, each kind of them.
  for (const [route, filter] of [['POST /v1/console/login', '.csrf_token'], ['GET /v1/console/projects', `'.projects[0].id'`],
    ['GET /v1/projects/{}/audit/log', '.witness_vkey'], ['POST /v1/authorize', '.audit_id'], ['GET /v1/projects/{}/audit/{}/proof', `'.event.data.amount.minor = 50'`]]) {
    assert.ok(reads.some((r) => r.route === route && r.filter === filter), `read: ${route} ${filter}`);
  }
  assert.ok(reads.length >= 20, `the walk-throughs' reads are found (${reads.length})`);

  const undeclared: string[] = [];
  for (const { where, route, filter } of reads) {
    const schemas = successSchemas.get(route);
    if (!schemas) { undeclared.push(`${where}: ${route} is not a route`); continue; }
    for (const path of filterPaths(filter)) {
      if (!schemas.some((s) => declares(doc, s, path))) undeclared.push(`${where}: ${route} | jq ${filter}: no ${path.join('.')}`);
    }
  }
  assert.deepEqual(undeclared, []);
});

test('every body a walk-through sends has the members its route\'s request schema declares, all it requires', async () => {
  const doc = await servedDocument();
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false, logger: false });
  ajv.addSchema({ $id: 'openapi.json', components: doc.components });
  const requestSchemas = new Map<string, Schema>();
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      const schema = op.requestBody?.content['application/json']?.schema;
      if (schema) requestSchemas.set(shape(`${method.toUpperCase()} ${path}`), schema);
    }
  }
  const sent = walkthroughPages().flatMap((page) => codeBlocks(page).flatMap(curlCalls).filter((c) => c.body !== undefined).map((c) => ({ page, ...c })));
  assert.ok(sent.length >= 25 && sent.some((c) => c.page === 'docs/executions.md'), `the walk-throughs' bodies are read (${sent.length})`);
  const faults: string[] = [];
  for (const { page, route, body } of sent) {
    const schema = requestSchemas.get(route);
    if (!schema) { faults.push(`${page}: ${route} takes no body`); continue; }
    let value: unknown;
    try { value = JSON.parse(body!); } catch { faults.push(`${page}: ${route}: the body is not JSON: ${body}`); continue; }
    const validate = ajv.compile(JSON.parse(JSON.stringify(schema).replaceAll('"$ref":"#/', '"$ref":"openapi.json#/')) as object);
    if (validate(value)) continue;
    // Only members: every variable was read as 1, so the values' own checks say nothing here.
    for (const e of validate.errors ?? []) {
      if (e.keyword === 'additionalProperties') faults.push(`${page}: ${route}: ${e.instancePath}/${String(e.params.additionalProperty)} is not a member it takes`);
      if (e.keyword === 'required') faults.push(`${page}: ${route}: ${e.instancePath}/${String(e.params.missingProperty)} is required`);
    }
  }
  assert.deepEqual([...new Set(faults)], []);
});

test('a member no answer declares is found (the check above can fail)', () => {
  const doc: Document = { paths: {}, components: { schemas: { Key: { type: 'object', properties: { secret: { type: 'string' } } } } } };
  const key: Schema = { $ref: '#/components/schemas/Key' };
  assert.equal(declares(doc, key, ['secret']), true);
  assert.equal(declares(doc, key, ['secert']), false);
  assert.equal(declares(doc, { type: 'object', properties: { items: { type: 'array', items: key } } }, ['items', 0, 'secret']), true);
  assert.equal(declares(doc, { type: 'object', properties: { data: {} } }, ['data', 'anything']), true);
  assert.deepEqual(filterPaths(`'{witnessed, kind: .event.kind}'`), [['event', 'kind'], ['witnessed']]);
  assert.deepEqual(filterPaths(`'.projects[0].id'`), [['projects', 0, 'id']]);
  // A jq inside the URL's command substitution reads another answer, not this one's.
  const [call] = curlCalls('curl -s "$G/v1/projects/$P/audit/consistency?from=1&to=$(echo "$LOG" | jq -r .size)" > c.json\n');
  assert.deepEqual([call!.route, call!.piped, call!.savedIn], ['GET /v1/projects/{}/audit/consistency', undefined, 'c.json']);
  assert.deepEqual(laterReads('x=$(jq .tree_size proof.json)\necho "$LOG" | jq -r .size'), [{ variable: 'LOG', filter: '.size' }, { file: 'proof.json', filter: '.tree_size' }]);
});
