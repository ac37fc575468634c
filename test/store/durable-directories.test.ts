// Every directory Gavel makes (a first start's data directory and its parents, `keys/`, the
// witness's directory) has its entry flushed: an fsync of a file does not make its name durable,
// and on a file system that does not order directory writes a power loss could lose `keys/` while
// the database keeps the public half of the key it held. A power loss cannot be staged here; what
// survives one is what was fsynced, so these tests watch the directories flushed.
import { test, mock } from 'node:test';
import assert from 'node:assert/strict';
import fs, { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { LocalSigner } from '../../src/signer/local.ts';
import { takeServingLock } from '../../src/store/sqlite/serving-lock.ts';
import { openStore } from '../../src/store/store.ts';
import { loadOrCreateWitnessKey } from '../../src/witness/key.ts';
import { WitnessStore } from '../../src/witness/store.ts';

/** The directories fsynced (through node:fs, which src imports by name: hence the sync) while `body` ran. */
async function directoriesFlushed(body: () => unknown): Promise<string[]> {
  const opened = new Map<number, string>();
  const flushed: string[] = [];
  const { openSync: realOpen, fsyncSync: realFsync } = fs;
  mock.method(fs, 'openSync', ((path: fs.PathLike, flags?: fs.OpenMode, mode?: fs.Mode) => {
    const fd = realOpen(path, flags ?? 'r', mode);
    opened.set(fd, resolve(String(path)));
    return fd;
  }) as typeof fs.openSync);
  mock.method(fs, 'fsyncSync', (fd: number) => {
    if (fs.fstatSync(fd).isDirectory()) flushed.push(opened.get(fd) ?? `fd ${fd}`);
    realFsync(fd);
  });
  syncBuiltinESMExports();
  try { await body(); } finally { mock.restoreAll(); syncBuiltinESMExports(); }
  return flushed;
}

function inTempDir(fn: (root: string) => Promise<void>): () => Promise<void> {
  return async () => {
    const root = mkdtempSync(join(tmpdir(), 'gavel-durable-dirs-'));
    try { await fn(root); } finally { rmSync(root, { recursive: true, force: true }); }
  };
}

function assertFlushed(flushed: string[], expected: string[]): void {
  for (const dir of expected) assert.ok(flushed.includes(dir), `${dir} flushed; were: ${flushed.join(', ') || 'none'}`);
}

test('the keys directory made beside a database is flushed into the data directory, not only its key into it', inTempDir(async (root) => {
  const data = join(root, 'data');
  mkdirSync(data); // there already: the database is in it
  const flushed = await directoriesFlushed(() => new LocalSigner(join(data, 'keys')).publicKey('checkpoint-log'));
  assertFlushed(flushed, [join(data, 'keys'), data]);
}));

test('a data directory made for the keys alone (PostgreSQL) is flushed into its parent', inTempDir(async (root) => {
  const data = join(root, 'data');
  const flushed = await directoriesFlushed(() => new LocalSigner(join(data, 'keys')).publicKey('checkpoint-log'));
  assertFlushed(flushed, [join(data, 'keys'), data, root]);
}));

test('a key made in a keys directory that was there flushes that directory alone', inTempDir(async (root) => {
  const keys = join(root, 'keys');
  mkdirSync(keys);
  assert.deepEqual(await directoriesFlushed(() => new LocalSigner(keys).publicKey('permits')), [keys]);
}));

test('a first start\'s data directory, and each parent it made, is flushed when the serving lock makes it', inTempDir(async (root) => {
  const data = join(root, 'new', 'data');
  let release = () => {};
  const flushed = await directoriesFlushed(() => { release = takeServingLock(join(data, 'gavel.db')).release; });
  release();
  assertFlushed(flushed, [data, join(root, 'new'), root]);
}));

test('a data directory the store makes (gavel migrate on a first start) is flushed into its parent', inTempDir(async (root) => {
  const data = join(root, 'new', 'data');
  let close = async () => {};
  const flushed = await directoriesFlushed(() => { const store = openStore({ kind: 'sqlite', file: join(data, 'gavel.db') }); close = () => store.close(); });
  await close();
  assertFlushed(flushed, [data, join(root, 'new'), root]);
}));

test('the witness\'s data directory is flushed into its parent, by its key and by its store', inTempDir(async (root) => {
  const byKey = join(root, 'k', 'witness');
  assertFlushed(await directoriesFlushed(() => loadOrCreateWitnessKey(byKey)), [byKey, join(root, 'k'), root]);
  const byStore = join(root, 's', 'witness');
  let store: WitnessStore | undefined;
  const flushed = await directoriesFlushed(() => { store = new WitnessStore(byStore); });
  store?.close();
  assertFlushed(flushed, [byStore, join(root, 's'), root]);
}));

test('a key another process linked first is flushed into its directory before this one uses it', inTempDir(async (root) => {
  const keys = join(root, 'keys');
  mkdirSync(keys);
  const { linkSync: realLink } = fs;
  let flushed: string[] = [];
  // The other process's key takes the name between this one's read (none) and its link; the
  // other may yet die before it flushes the directory, and this one records and signs with the key.
  mock.method(fs, 'linkSync', (from: string, to: string) => {
    fs.writeFileSync(`${to}.other`, fs.readFileSync(from));
    realLink(`${to}.other`, to);
    fs.rmSync(`${to}.other`);
    realLink(from, to);
  });
  try { flushed = await directoriesFlushed(() => new LocalSigner(keys).publicKey('permits')); } finally { mock.restoreAll(); syncBuiltinESMExports(); }
  assert.deepEqual(flushed.at(-1), keys, `the directory is flushed after the other's key took its name; were: ${flushed.join(', ')}`);
}));
