// A fault of the service itself (http/errors.ts): the caller gets a 500 problem that says nothing of
// the fault (no message, no stack, no SQL), and the log gets the error with its stack.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import Fastify, { type FastifyError } from 'fastify';
import { installErrorHandling, toProblem } from '../../src/http/errors.ts';
import { RouteTable } from '../../src/http/route-table.ts';

test('a 500 names no detail of the fault to the caller, and logs the error with its stack', async () => {
  const lines: string[] = [];
  const stream = new Writable({ write(chunk, _enc, done) { lines.push(String(chunk)); done(); } });
  const app = Fastify({ logger: { level: 'error', stream } });
  installErrorHandling(app, new RouteTable());
  app.get('/fault', async () => { throw new Error('select secret_column from api_keys failed'); });
  try {
    const res = await app.inject({ method: 'GET', url: '/fault' });
    assert.equal(res.statusCode, 500);
    assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
    assert.equal(res.json().code, 'internal_error');
    assert.doesNotMatch(res.body, /secret_column|at .*internal-error\.test/);
    const logged = lines.map((l) => JSON.parse(l)).find((l) => l.msg === 'request failed');
    assert.ok(logged, lines.join(''));
    assert.match(logged.err.message, /secret_column/);
    assert.match(logged.err.stack, /internal-error\.test\.ts/);
  } finally { await app.close(); }
});

// A request body that is not JSON is refused by http/body.ts (or Fastify's parser) before any
// handler runs; a SyntaxError a handler throws is the service misreading JSON of its own (a damaged
// row, say): a logged 500, not the client's malformed_json.
test('a bare SyntaxError is a 500 internal_error, logged; Fastify\'s own body errors stay 400 malformed_json', async () => {
  assert.deepEqual([toProblem(new SyntaxError('x') as FastifyError).status, toProblem(new SyntaxError('x') as FastifyError).code], [500, 'internal_error']);
  const fastifyError = (code: string | undefined, message: string) => Object.assign(new SyntaxError(message), { code, statusCode: 400 }) as FastifyError;
  assert.equal(toProblem(fastifyError('FST_ERR_CTP_INVALID_JSON_BODY', "Body is not valid JSON but content-type is set to 'application/json'")).code, 'malformed_json');
  assert.equal(toProblem(fastifyError(undefined, 'Unexpected end of JSON input')).code, 'malformed_json');

  const lines: string[] = [];
  const stream = new Writable({ write(chunk, _enc, done) { lines.push(String(chunk)); done(); } });
  const app = Fastify({ logger: { level: 'error', stream } });
  installErrorHandling(app, new RouteTable());
  app.get('/stored', async () => JSON.parse('{"roles": [') as unknown);
  try {
    const res = await app.inject({ method: 'GET', url: '/stored' });
    assert.equal(res.statusCode, 500, res.body);
    assert.equal(res.json().code, 'internal_error');
    const logged = lines.map((l) => JSON.parse(l)).find((l) => l.msg === 'request failed');
    assert.equal(logged?.err.type, 'SyntaxError', lines.join(''));
  } finally { await app.close(); }
});
