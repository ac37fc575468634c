// GET /openapi.json needs no credential and its answer is about 290 KB: made afresh for every
// request, the answers to a few dozen connections' pipelined requests (within the bound of
// http/message-checks.ts) were together larger than the process's heap, and it ended out of memory.
// The document is serialized once, and every answer sends the same bytes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { backends } from '../support/backends.ts';
import { spawnGavel, prepareForChildren } from '../support/process.ts';
import { MAX_PIPELINED_REQUESTS } from '../../src/http/message-checks.ts';

const CONNECTIONS = 40;
const EACH = MAX_PIPELINED_REQUESTS + 1;
const STATUS_LINE = 'HTTP/1.1 200 OK\r\n';

/** A connection that sends its requests at once and reads nothing until `read()`; `first` settles when an answer begins to arrive. */
function pipelined(port: number, request: string): { first: Promise<void>; read(): Promise<number> } {
  const socket: Socket = connect(port, '127.0.0.1');
  socket.pause();
  let answers = 0;
  let tail = '';
  const done = new Promise<number>((resolve) => {
    socket.on('error', () => {});
    socket.on('close', () => resolve(answers));
  });
  // A server that ended closes the connection instead.
  const first = new Promise<void>((resolve) => { socket.once('readable', () => resolve()); socket.once('close', () => resolve()); });
  socket.write(request.repeat(EACH));
  return {
    first,
    read: () => {
      // While a 'readable' listener is attached, resume() would not start the flow.
      socket.removeAllListeners('readable');
      socket.setEncoding('latin1');
      socket.on('data', (d: string) => {
        // Status lines are counted across chunk boundaries: the last few characters are carried over.
        const text = tail + d;
        answers += text.split(STATUS_LINE).length - 1;
        tail = text.slice(-(STATUS_LINE.length - 1));
        if (answers === EACH) socket.end();
      });
      socket.resume();
      return done;
    },
  };
}

test('dozens of connections pipelining GET /openapi.json get every answer from a server with a 128 MiB heap', async () => {
  const { env } = await prepareForChildren(backends()[0]!);
  const gavel = await spawnGavel(env, { nodeArgs: ['--max-old-space-size=128'] });
  try {
    const port = Number(new URL(gavel.url).port);
    const request = 'GET /openapi.json HTTP/1.1\r\nHost: x\r\n\r\n';
    const clients = Array.from({ length: CONNECTIONS }, () => pipelined(port, request));
    // Every connection's answers are made before any is read.
    await Promise.all(clients.map((c) => c.first));
    const answered = await Promise.all(clients.map((c) => c.read()));
    assert.deepEqual(answered, Array(CONNECTIONS).fill(EACH));
    assert.equal(gavel.child.exitCode, null, 'the server exited');
    assert.equal((await fetch(`${gavel.url}/healthz`)).status, 200);
  } finally { await gavel.kill(); }
});
