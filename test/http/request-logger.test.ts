// Each request's logger is made lazily (http/request-logger.ts): what it logs must be exactly what
// pino's own child would log, bindings included, and a disabled level must log nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import pino from 'pino';
import type { FastifyBaseLogger } from 'fastify';
import { lazyChildLogger } from '../../src/http/request-logger.ts';
import { loadConfig } from '../../src/config/config.ts';
import { backends } from '../support/backends.ts';
import { checkedService } from '../support/service.ts';

function capture(): { lines: Record<string, unknown>[]; stream: Writable } {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({ write(chunk, _enc, cb) { for (const l of String(chunk).split('\n')) if (l) lines.push(JSON.parse(l)); cb(); } });
  return { lines, stream };
}

test('a request logger logs what pino\'s child would, with its bindings, and nothing at a disabled level', () => {
  const { lines, stream } = capture();
  const parent = pino({ level: 'warn', base: { svc: 'gavel' } }, stream) as unknown as FastifyBaseLogger;
  const log = lazyChildLogger(parent, { reqId: 'req_1' }, {});
  assert.equal(log.level, 'warn');
  log.info('not logged');
  log.debug({ x: 1 }, 'not logged');
  assert.equal(lines.length, 0, 'a disabled level writes nothing');
  log.warn({ a: 1 }, 'careful');
  log.error(new Error('boom'), 'failed');
  assert.deepEqual(lines.map((l) => [l.reqId, l.svc, l.msg, l.level]), [['req_1', 'gavel', 'careful', 40], ['req_1', 'gavel', 'failed', 50]]);
  assert.equal(lines[0]!.a, 1);
  assert.match(String((lines[1]!.err as { message: string }).message), /boom/);
  // A level set on the child is the child's: the parent keeps its own.
  log.level = 'info';
  log.info('now logged');
  assert.equal(lines.at(-1)!.msg, 'now logged');
  assert.equal(lines.at(-1)!.reqId, 'req_1');
  assert.equal(parent.level, 'warn');
  const grandchild = log.child({ step: 'x' });
  grandchild.warn('deeper');
  assert.deepEqual([lines.at(-1)!.reqId, lines.at(-1)!.step], ['req_1', 'x']);
});

test('a request logger with a level of its own, or of a logger that cannot tell its levels, is made at once', () => {
  const { lines, stream } = capture();
  const parent = pino({ level: 'warn' }, stream) as unknown as FastifyBaseLogger;
  const own = lazyChildLogger(parent, { reqId: 'req_2' }, { level: 'debug' });
  own.debug('route level');
  assert.deepEqual([lines.at(-1)!.msg, lines.at(-1)!.reqId], ['route level', 'req_2']);
  let made = 0;
  const plain = { level: 'info', info() {}, error() {}, debug() {}, fatal() {}, warn() {}, trace() {}, silent() {}, child() { made++; return plain; } } as unknown as FastifyBaseLogger;
  assert.equal(lazyChildLogger(plain, { reqId: 'req_3' }, {}), plain);
  assert.equal(made, 1);
});

test('the service\'s request logs carry the request id its response names', async () => {
  const ts = await backends()[0]!.open();
  const { lines, stream } = capture();
  const service = await checkedService(loadConfig({}, { dataDir: ts.dataDir, logLevel: 'info' }), { store: ts.store, logger: { level: 'info', stream } as never });
  try {
    const res = await service.app.inject({ method: 'GET', url: '/v1/projects/prj_x/agents/state', headers: { authorization: 'Bearer wrong' } });
    assert.equal(res.statusCode, 401);
    const id = res.headers['x-request-id'];
    const mine = lines.filter((l) => l.reqId === id);
    assert.ok(mine.some((l) => l.msg === 'incoming request'), JSON.stringify(lines.slice(-3)));
    assert.ok(mine.some((l) => l.msg === 'request completed'));
    // At warn, a request that logs nothing makes no child logger at all.
    const root = service.app.log as FastifyBaseLogger & { child: FastifyBaseLogger['child'] };
    const made: unknown[] = [];
    const child = root.child.bind(root);
    root.child = (bindings, options) => { made.push(bindings); return child(bindings, options); };
    root.level = 'warn';
    const quiet = await service.app.inject({ method: 'GET', url: '/v1/projects/prj_x/agents/state', headers: { authorization: 'Bearer wrong' } });
    assert.equal(quiet.statusCode, 401);
    assert.deepEqual(made, [], 'no child was made for a request that logged nothing');
  } finally {
    await service.close();
    await ts.cleanup();
  }
});
