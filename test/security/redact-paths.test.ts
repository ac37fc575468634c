// The logger's redaction (http/app.ts REDACT) masks credential headers wherever a log line carries
// a headers object: Fastify's serializers log none, so this guards a line that logs one itself.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import pino from 'pino';
import { REDACT } from '../../src/http/app.ts';
import { backends } from '../support/backends.ts';
import { startService } from '../support/service.ts';

test('credential headers are masked in a headers object at the top of a log line or one member down', () => {
  const lines: string[] = [];
  const stream = new Writable({ write(chunk, _enc, cb) { lines.push(String(chunk)); cb(); } });
  const log = pino({ level: 'trace', redact: REDACT }, stream);
  const headers = { authorization: 'Bearer gvl_secret', 'proxy-authorization': 'Basic c2VjcmV0', cookie: 'gavel_session=sessA1', 'x-csrf-token': 'csrf-secret', 'set-cookie': ['gavel_session=sessB2'], 'user-agent': 'curl/8' };
  log.info({ headers }, 'top');
  log.info({ req: { method: 'GET', headers } }, 'request');
  log.info({ res: { statusCode: 200, headers } }, 'reply');
  log.error({ err: { message: 'boom', headers } }, 'error');
  assert.equal(lines.length, 4);
  for (const line of lines) {
    for (const secret of ['gvl_secret', 'c2VjcmV0', 'sessA1', 'csrf-secret', 'sessB2']) assert.ok(!line.includes(secret), `${secret} in ${line}`);
    assert.match(line, /curl\/8/, 'other headers are kept');
    assert.equal((line.match(/\[Redacted\]/g) ?? []).length, 5, line);
  }
});

test('the service applies the redaction to its own logger: a logger given without one masks credential headers too', async () => {
  const lines: string[] = [];
  const stream = new Writable({ write(chunk, _enc, cb) { lines.push(String(chunk)); cb(); } });
  const svc = await startService(backends()[0]!, {}, undefined, { logger: { level: 'trace', stream } });
  try {
    svc.app.log.info({ headers: { authorization: 'Bearer gvl_logged_top' } }, 'top');
    svc.app.log.info({ upstream: { headers: { cookie: 'gavel_session=logged_nested' } } }, 'nested');
    const all = lines.join('\n');
    assert.ok(all.includes('"top"') && all.includes('"nested"'), 'both lines were logged');
    assert.ok(!all.includes('gvl_logged_top'), `authorization logged: ${all}`);
    assert.ok(!all.includes('logged_nested'), `cookie logged: ${all}`);
  } finally { await svc.stop(); }
});
