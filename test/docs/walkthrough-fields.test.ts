// Every member the walk-throughs of the README and docs/*.md read from an answer with jq
// (`| jq -r .secret`, `echo "$LOG" | jq -r .log_vkey`, `jq '{witnessed, …}' proof.json`) is one the
// success answer of that route declares in the OpenAPI document, whose response schemas real answers
// are held to (test/support/answer-schemas.ts). A member renamed in the service, or misspelt in a
// doc, would otherwise give the reader `null` and a next step that fails for no reason it shows.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { startService } from '../support/service.ts';
import { codeBlocks, curlCalls, filterPaths, laterReads, walkthroughPages } from '../support/walkthroughs.ts';

type Schema = { $ref?: string; type?: string | string[]; properties?: Record<string, Schema>; items?: Schema; anyOf?: Schema[]; oneOf?: Schema[]; allOf?: Schema[] };
interface Document {
  paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, { schema: Schema }> }> }>>;
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

test('every member a walk-through reads from an answer with jq is one that answer declares', async () => {
  const svc = await startService(backends()[0]!);
  let doc: Document;
  try { doc = (await svc.app.inject({ method: 'GET', url: '/openapi.json' })).json(); } finally { await svc.stop(); }
  const shape = (route: string) => route.replace(/\{[^}]+\}/g, '{}');
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

test('a member no answer declares is found (the check above can fail)', () => {
  const doc: Document = { paths: {}, components: { schemas: { Key: { type: 'object', properties: { secret: { type: 'string' } } } } } };
  const key: Schema = { $ref: '#/components/schemas/Key' };
  assert.equal(declares(doc, key, ['secret']), true);
  assert.equal(declares(doc, key, ['secert']), false);
  assert.equal(declares(doc, { type: 'object', properties: { items: { type: 'array', items: key } } }, ['items', 0, 'secret']), true);
  assert.equal(declares(doc, { type: 'object', properties: { data: {} } }, ['data', 'anything']), true);
  assert.deepEqual(filterPaths(`'{witnessed, kind: .event.kind}'`), [['event', 'kind'], ['witnessed']]);
  assert.deepEqual(filterPaths(`'.projects[0].id'`), [['projects', 0, 'id']]);
});
