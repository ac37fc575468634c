// The logger's redaction (http/app.ts REDACT) masks credential headers wherever a log line carries
// a headers object: Fastify's serializers log none, so this guards a line that logs one itself.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import pino from 'pino';
import { REDACT } from '../../src/http/app.ts';

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
