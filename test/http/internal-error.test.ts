// A fault of the service itself (http/errors.ts): the caller gets a 500 problem that says nothing of
// the fault (no message, no stack, no SQL), and the log gets the error with its stack.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import Fastify from 'fastify';
import { installErrorHandling } from '../../src/http/errors.ts';

test('a 500 names no detail of the fault to the caller, and logs the error with its stack', async () => {
  const lines: string[] = [];
  const stream = new Writable({ write(chunk, _enc, done) { lines.push(String(chunk)); done(); } });
  const app = Fastify({ logger: { level: 'error', stream } });
  installErrorHandling(app, () => []);
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
