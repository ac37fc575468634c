// Witness processes starting together on a fresh data directory (gavel up's witness restarted
// beside an operator's, two containers on one volume): each must come up with the one key, never
// read the file another is still writing (it read an empty one, "holds no readable private key",
// and exited: seen in CI) and never overwrite it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const script = `import { loadOrCreateWitnessKey } from ${JSON.stringify(new URL('../../src/witness/key.ts', import.meta.url).href)};
process.stdout.write(Buffer.from(loadOrCreateWitnessKey(process.argv[1]).publicKey).toString('hex'));`;

// Preloaded into the first process: its first write of the key pauses 1.5 s, after saying so.
const PAUSE = `import fs from 'node:fs'; import { syncBuiltinESMExports } from 'node:module';
const write = fs.writeSync; let paused = false;
fs.writeSync = (...args) => { if (!paused) { paused = true; process.stderr.write('paused\\n'); Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1500); } return write(...args); };
syncBuiltinESMExports();`;

/** A module to preload, written beside the data directory inside the test's own temporary one. */
function preloadIn(dir: string, source: string, name = 'preload.mjs'): string {
  const path = join(dir, name);
  writeFileSync(path, source);
  return path;
}

function start(dir: string, preload?: string): { done: Promise<{ code: number | null; out: string; err: string }>; paused: Promise<void> } {
  const child = spawn(process.execPath, [...(preload ? ['--import', preload] : []), '--input-type=module', '-e', script, dir]);
  let out = '';
  let err = '';
  let onPause = () => {};
  const paused = new Promise<void>((resolve) => { onPause = resolve; });
  child.stdout.on('data', (d) => { out += d; });
  child.stderr.on('data', (d) => { err += d; if (err.includes('paused')) onPause(); });
  return { done: new Promise((resolve) => child.on('close', (code) => resolve({ code, out, err }))), paused };
}

test('a process starting while another is still writing the new key reads the one key, whole, and both come up', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gavel-witness-key-'));
  try {
    const preload = preloadIn(dir, PAUSE);
    const first = start(join(dir, 'data'), preload);
    await first.paused;
    const second = start(join(dir, 'data'));
    const [a, b] = await Promise.all([first.done, second.done]);
    assert.equal(b.code, 0, `the second process: ${b.err}`);
    assert.equal(a.code, 0, `the first process: ${a.err}`);
    assert.match(a.out, /^[0-9a-f]{64}$/);
    assert.equal(a.out, b.out, 'both hold the same key');
    assert.deepEqual(readdirSync(join(dir, 'data')), ['witness-key.pem'], 'no partial file is left behind');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

// Preloaded: link(2) fails as on a file system without hard links (SMB shares, FAT).
const NO_LINKS = `import fs from 'node:fs'; import { syncBuiltinESMExports } from 'node:module';
fs.linkSync = () => { throw Object.assign(new Error('EPERM: operation not permitted, link'), { code: 'EPERM' }); };
syncBuiltinESMExports();`;

test('on a file system without hard links the key is still created, in place, and read back the same on the next start', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gavel-witness-key-'));
  try {
    const preload = preloadIn(dir, NO_LINKS);
    const first = await start(join(dir, 'data'), preload).done;
    const again = await start(join(dir, 'data'), preload).done;
    assert.equal(first.code, 0, `the first start: ${first.err}`);
    assert.match(first.out, /^[0-9a-f]{64}$/);
    assert.equal(again.out, first.out, 'the next start reads the key it wrote');
    assert.deepEqual(readdirSync(join(dir, 'data')), ['witness-key.pem'], 'no partial file is left behind');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

// Preloaded: no hard links, and the first creation of the key file itself waits, after saying so,
// until another process has written the file (for at most 30 s).
const NO_LINKS_CREATE_AFTER_ANOTHER = `${NO_LINKS}
const open = fs.openSync; let paused = false;
const written = (path) => { try { return fs.statSync(path).size > 0; } catch { return false; } };
fs.openSync = (path, ...rest) => {
  if (!paused && String(path).endsWith('witness-key.pem')) {
    paused = true; process.stderr.write('paused\\n');
    for (let i = 0; i < 3000 && !written(path); i++) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10);
  }
  return open(path, ...rest);
};
syncBuiltinESMExports();`;

test('without hard links, a process that finds the key created while it made its own takes that one, never writes over it', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gavel-witness-key-'));
  try {
    const first = start(join(dir, 'data'), preloadIn(dir, NO_LINKS_CREATE_AFTER_ANOTHER));
    await first.paused;
    const [second, a] = await Promise.all([start(join(dir, 'data'), preloadIn(dir, NO_LINKS, 'no-links.mjs')).done, first.done]);
    assert.equal(second.code, 0, `the second process: ${second.err}`);
    assert.equal(a.code, 0, `the first process: ${a.err}`);
    assert.equal(a.out, second.out, 'both hold the same key');
    assert.equal((await start(join(dir, 'data')).done).out, second.out, 'and the file holds it');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

// Preloaded: says on stderr which paths were flushed (a power loss cannot be staged in a test; what
// survives one is what was fsynced before the key was used).
const FSYNCS = `import fs from 'node:fs'; import { syncBuiltinESMExports } from 'node:module';
const open = fs.openSync, fsync = fs.fsyncSync, paths = new Map();
fs.openSync = (path, ...rest) => { const fd = open(path, ...rest); paths.set(fd, String(path)); return fd; };
fs.fsyncSync = (fd) => { process.stderr.write('fsync ' + paths.get(fd) + '\\n'); return fsync(fd); };
syncBuiltinESMExports();`;

test('a new key is flushed, file and directory, before it is used', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gavel-witness-key-'));
  try {
    const data = join(dir, 'data');
    const r = await start(data, preloadIn(dir, FSYNCS)).done;
    assert.equal(r.code, 0, r.err);
    const flushed = [...r.err.matchAll(/^fsync (.*)$/gm)].map((m) => m[1]!);
    assert.ok(flushed.some((p) => p.startsWith(join(data, 'witness-key.pem'))), `the key file: ${flushed.join(', ')}`);
    assert.ok(flushed.includes(data), `its directory: ${flushed.join(', ')}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
