// A process that died between writing a key's partial file and removing it left a copy of a
// private key beside it; the next load of that key removes it, and never one being written.
import { mock, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import fs, { mkdirSync, mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalSigner } from '../../src/signer/local.ts';
import { loadOrCreateWitnessKey, WITNESS_KEY_FILE } from '../../src/witness/key.ts';

/** The pid of a process that has exited. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '']);
  await once(child, 'exit');
  return child.pid!;
}

/** Writes `<dir>/<key>.<pid>.<hex>.partial`, last written `ageMs` ago; answers its name. */
function partial(dir: string, key: string, pid: number, ageMs: number, hex = 'a1b2c3d4e5f6'): string {
  const name = `${key}.${pid}.${hex}.partial`;
  writeFileSync(join(dir, name), '-----BEGIN PRIVATE KEY-----\n', { mode: 0o600 });
  const at = (Date.now() - ageMs) / 1000;
  utimesSync(join(dir, name), at, at);
  return name;
}

test('each key loader removes its key\'s partial files whose writer is gone, and keeps any that may still be written', async () => {
  const root = mkdtempSync(join(tmpdir(), 'gavel-partials-'));
  const live = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1e6)']);
  try {
    const dead = await deadPid();
    const old = 5 * 60_000;
    for (const [dir, key, load] of [
      [join(root, 'keys'), 'permits.pem', () => new LocalSigner(join(root, 'keys')).publicKey('permits')],
      [join(root, 'witness'), WITNESS_KEY_FILE, async () => loadOrCreateWitnessKey(join(root, 'witness'))],
    ] as const) {
      mkdirSync(dir, { recursive: true });
      const kept = [
        partial(dir, key, live.pid!, old), // its writer still runs
        partial(dir, key, dead, 0, '0123456789ab'), // just written: a writer in another PID namespace looks gone
        partial(dir, 'checkpoints.pem', dead, old), // another key's: removed when that key is loaded
        `${key}.${dead}.partial`, // not a name createKeyFile gives
      ];
      writeFileSync(join(dir, kept.at(-1)!), '');
      partial(dir, key, dead, old, 'ffffffffffff'); // its writer died
      const before = partial(dir, key, process.pid, 0, '00000000000f'); // this pid's, from before this process started (a restarted container's pid 1)
      const started = performance.timeOrigin / 1000 - 60;
      utimesSync(join(dir, before), started, started);
      await load();
      assert.deepEqual(readdirSync(dir).sort(), [...kept, key].sort(), dir);
    }
  } finally {
    live.kill();
    rmSync(root, { recursive: true, force: true });
  }
});

test('a leftover partial file that cannot be removed is warned about, naming it, and the key is loaded all the same', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gavel-partials-'));
  const name = partial(dir, 'permits.pem', await deadPid(), 5 * 60_000);
  const warnings: string[] = [];
  const onWarning = (w: Error & { code?: string }) => { if (w.code === 'GAVEL_KEY_FILE_PARTIAL' && w.message.startsWith(dir)) warnings.push(w.message); };
  process.on('warning', onWarning);
  // A file system that refuses the removal (read-only, or a directory this user may no longer write).
  const realRm = fs.rmSync;
  mock.method(fs, 'rmSync', (path: string, options?: fs.RmOptions) => {
    if (path !== join(dir, name)) return realRm(path, options);
    throw Object.assign(new Error('EROFS: read-only file system, unlink'), { code: 'EROFS' });
  });
  syncBuiltinESMExports();
  try {
    assert.equal((await new LocalSigner(dir).publicKey('permits')).length, 32);
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(warnings, [`${join(dir, name)} is a leftover copy of a private key and could not be removed (EROFS: read-only file system, unlink); remove it`]);
  } finally {
    mock.restoreAll();
    syncBuiltinESMExports();
    process.off('warning', onWarning);
    rmSync(dir, { recursive: true, force: true });
  }
});
