// Past the process's open-file limit libuv accepts and closes each new connection itself, so
// clients meet closed connections and nothing is logged. A start whose limit cannot hold
// GAVEL_MAX_CONNECTIONS says so once, naming both numbers and what to change.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { fileLimitShortfall } from '../../src/http/connection-cap.ts';
import { backends } from '../support/backends.ts';
import { prepareForChildren, spawnGavel } from '../support/process.ts';

const limits = (soft: string) => `Limit                     Soft Limit           Hard Limit           Units     \nMax cpu time              unlimited            unlimited            seconds   \nMax open files            ${soft}                ${soft}                files     \n`;

describe('the open-file limit against GAVEL_MAX_CONNECTIONS', () => {
  test('a limit that holds the cap, with what is open and a reserve, says nothing', () => {
    assert.equal(fileLimitShortfall(limits('20000'), 30, 2048), undefined);
    assert.equal(fileLimitShortfall(limits('unlimited'), 30, 2048), undefined);
    assert.equal(fileLimitShortfall(limits('2142'), 30, 2048), undefined, 'exactly enough: 2142 - 30 - 64');
  });
  test('a limit short of the cap is reported with the connections it holds', () => {
    assert.deepEqual(fileLimitShortfall(limits('1024'), 30, 2048), { limit: 1024, usable: 930 });
    assert.deepEqual(fileLimitShortfall(limits('2141'), 30, 2048), { limit: 2141, usable: 2047 });
    assert.deepEqual(fileLimitShortfall(limits('50'), 30, 10), { limit: 50, usable: 0 });
  });
  test('limits it cannot read say nothing', () => {
    assert.equal(fileLimitShortfall('', 30, 2048), undefined);
  });

  const prlimit = ['/usr/bin/prlimit', '/bin/prlimit'].find((p) => existsSync(p));
  for (const backend of backends()) {
    test(`a server started under a low limit warns once, and not when the cap fits (${backend.name})`, { skip: !prlimit && 'prlimit is not installed' }, async () => {
      const { env } = await prepareForChildren(backend);
      const low = await spawnGavel({ ...env, GAVEL_LOG_LEVEL: 'warn' }, { prefix: [prlimit!, '--nofile=512:512', '--'] });
      try {
        const lines = low.lines.filter((l) => l.includes('open-file limit'));
        assert.equal(lines.length, 1, low.lines.join('\n'));
        const line = JSON.parse(lines[0]!) as { level: number; open_file_limit: number; max_connections: number; msg: string };
        assert.equal(line.level, 40);
        assert.equal(line.open_file_limit, 512);
        assert.equal(line.max_connections, 2048);
        assert.match(line.msg, /GAVEL_MAX_CONNECTIONS \(2048\)/);
        assert.match(line.msg, /ulimit -n/);
      } finally { await low.kill(); }
      const fits = await spawnGavel({ ...env, GAVEL_LOG_LEVEL: 'warn', GAVEL_MAX_CONNECTIONS: '100' }, { prefix: [prlimit!, '--nofile=512:512', '--'] });
      try {
        assert.deepEqual(fits.lines.filter((l) => l.includes('open-file limit')), []);
      } finally { await fits.kill(); }
    });
  }
});
