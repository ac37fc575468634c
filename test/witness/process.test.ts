import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { parseWitnessArgs } from '../../src/witness/main.ts';
import { MAIN } from '../support/process.ts';
import { addCheckpoint } from '../../src/witness/client.ts';
import { leafHash } from '../../src/domain/auditlog/hash.ts';
import { appendLeaves, consistencyProof, nodeKey, type StoredNode } from '../../src/domain/auditlog/tree.ts';
import { signCheckpoint } from '../../src/domain/auditlog/checkpoint.ts';
import { ed25519NoteSigner, formatVkey, SIG_TYPE_ED25519 } from '../../src/domain/auditlog/note.ts';
import { TestSigner } from '../domain/auditlog/support.ts';

const ORIGIN = 'gavel.test/audit';
const children: ChildProcess[] = [];
const dir = mkdtempSync(join(tmpdir(), 'gavel-witness-proc-'));
after(() => {
  for (const c of children) c.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
});

test('parseWitnessArgs: ORIGIN=VKEY and bare VKEY (origin = key name), with defaults', () => {
  const vkey = 'TEST+7997405c+AQcC+FTVKf0jlTdHDY3rbevmnKxxPjigCXlVtGe6RIr6';
  const o = parseWitnessArgs(['--log', `gavel.test/audit=${vkey}`, '--log', vkey, '--port', '0']);
  assert.deepEqual(o.logs, [
    { origin: 'gavel.test/audit', vkeys: [vkey] },
    { origin: 'TEST', vkeys: [vkey] },
  ]);
  assert.equal(o.host, '127.0.0.1');
  assert.equal(o.port, 0);
  assert.throws(() => parseWitnessArgs([]), /--log/);
  assert.throws(() => parseWitnessArgs(['--log', 'o=not-a-vkey']));
  assert.throws(() => parseWitnessArgs(['--log', vkey, '--port', '70000']));
  assert.equal(parseWitnessArgs(['--log', vkey, '--port', '65535']).port, 65535, 'the highest port is a port');
  for (const port of ['abc', '1e3', '0x10', '']) assert.throws(() => parseWitnessArgs(['--log', vkey, '--port', port]), /--port must be 0-65535/, port);
  assert.throws(() => parseWitnessArgs(['--log', `=${vkey}`]), /not a verifier key/, 'an empty origin is no origin');
  assert.equal(parseWitnessArgs(['--log', vkey, '--name', 'witness.example/w']).name, 'witness.example/w');
  // Two keys for one origin (a log rotating its key): the witness accepts either.
  const other = formatVkey('gavel.test/audit', SIG_TYPE_ED25519, new Uint8Array(32).fill(9));
  assert.deepEqual(parseWitnessArgs(['--log', `gavel.test/audit=${vkey}`, '--log', other]).logs, [{ origin: 'gavel.test/audit', vkeys: [vkey, other] }]);
  // A key name may hold '=': bare, the whole is the key; after ORIGIN=, the rest is.
  const eqName = formatVkey('gavel.test/a=b', SIG_TYPE_ED25519, new Uint8Array(32).fill(9));
  assert.deepEqual(parseWitnessArgs(['--log', eqName, '--log', `o=${eqName}`]).logs, [{ origin: 'gavel.test/a=b', vkeys: [eqName] }, { origin: 'o', vkeys: [eqName] }]);
});

test('gavel witness: --help prints the usage; a wrong command line is one line and the usage, exit 2, no stack trace', () => {
  const run = (args: string[]) => spawnSync(process.execPath, [MAIN, 'witness', ...args], { encoding: 'utf8', timeout: 30_000 });
  const help = run(['--help']);
  assert.equal(help.status, 0);
  assert.match(help.stdout, /^usage: gavel witness --log ORIGIN=VKEY/);
  for (const [args, said] of [[[], /at least one --log/], [['--log'], /argument missing|--log/], [['--log', 'garbage'], /--log garbage: not a verifier key/], [['--nope'], /Unknown option '--nope'/], [['--log', `o=${formatVkey('w.example', 0x04, new Uint8Array(32).fill(7))}`], /not a log's Ed25519 key/],
    [['--log', formatVkey(ORIGIN, SIG_TYPE_ED25519, new Uint8Array(32).fill(7)), '--name', 'my witness'], /--name my witness: key name must be non-empty, without spaces/]] as const) {
    const r = run([...args]);
    assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, said);
    assert.match(r.stderr, /^gavel: [^\n]*\n\nusage: gavel witness/);
    assert.doesNotMatch(r.stderr, /\n\s+at /);
  }
});

test('gavel witness: a damaged key file, a data directory blocked by a file, a port in use and a host it cannot listen on, are one line each naming what to fix, exit 2', async () => {
  const vkey = formatVkey(ORIGIN, SIG_TYPE_ED25519, new Uint8Array(32).fill(9));
  const damaged = mkdtempSync(join(dir, 'damaged-'));
  writeFileSync(join(damaged, 'witness-key.pem'), '');
  const r = spawnSync(process.execPath, [MAIN, 'witness', '--data-dir', damaged, '--port', '0', '--log', `${ORIGIN}=${vkey}`], { encoding: 'utf8', timeout: 30_000 });
  assert.equal(r.status, 2, r.stderr);
  assert.match(r.stderr, /^gavel: .*witness-key\.pem holds no readable private key \(empty or damaged\): restore it/);
  assert.doesNotMatch(r.stderr, /\n\s+at /);
  assert.equal(readFileSync(join(damaged, 'witness-key.pem'), 'utf8'), '', 'a damaged key is never replaced');
  // A data directory blocked by a file names the flag that sets it here, not the service's variable.
  writeFileSync(join(dir, 'a-file'), 'x');
  const blocked = spawnSync(process.execPath, [MAIN, 'witness', '--data-dir', join(dir, 'a-file', 'w'), '--port', '0', '--log', `${ORIGIN}=${vkey}`], { encoding: 'utf8', timeout: 30_000 });
  assert.equal(blocked.status, 2, blocked.stderr);
  assert.match(blocked.stderr, /^gavel: cannot create the directory .*a-file\/w: a file of that name is in the way \(--data-dir must be a directory, or a path where one can be made\)\n$/);
  const busy = createServer();
  await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
  try {
    const port = String((busy.address() as AddressInfo).port);
    const p = spawnSync(process.execPath, [MAIN, 'witness', '--data-dir', mkdtempSync(join(dir, 'port-')), '--port', port, '--log', `${ORIGIN}=${vkey}`], { encoding: 'utf8', timeout: 30_000 });
    assert.equal(p.status, 2, p.stderr);
    assert.match(p.stderr, /^gavel: cannot listen on 127\.0\.0\.1:\d+: the port is in use \(--port\)\n$/);
  } finally { busy.close(); }
  // A host it cannot listen on names the flag too, not the service's GAVEL_HOST.
  const host = (h: string) => spawnSync(process.execPath, [MAIN, 'witness', '--data-dir', mkdtempSync(join(dir, 'host-')), '--host', h, '--port', '0', '--log', `${ORIGIN}=${vkey}`], { encoding: 'utf8', timeout: 30_000 });
  const absent = host('192.0.2.1');
  assert.equal(absent.status, 2, absent.stderr);
  assert.match(absent.stderr, /^gavel: cannot listen on 192\.0\.2\.1: no such address on this machine \(--host\)\n$/);
  const unresolved = host('no-such-host.invalid');
  assert.equal(unresolved.status, 2, unresolved.stderr);
  assert.match(unresolved.stderr, /^gavel: cannot resolve the host name "no-such-host\.invalid" \(--host\)\n$/);
});

test('gavel audit: --help prints each checker\'s usage and exit statuses (bare `gavel audit`, a usage error: test/service/startup-failures.test.ts)', () => {
  const run = (args: string[]) => spawnSync(process.execPath, [MAIN, 'audit', ...args], { encoding: 'utf8', timeout: 30_000 });
  for (const args of [['--help'], ['verify', '--help'], ['verify', 'proof.json', '-h'], ['consistency', '--help']]) {
    const r = run(args);
    assert.equal(r.status, 0, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stdout, /^usage: gavel audit (verify|consistency)/, args.join(' '));
    assert.match(r.stdout, /exit status: 0 (VERIFIED|CONSISTENT), 1 NOT/, args.join(' '));
  }
  assert.match(run(['consistency', '--help']).stdout, /^usage: gavel audit consistency/);
  const wrong = run(['nope']);
  assert.equal(wrong.status, 2);
  assert.match(wrong.stderr, /unknown audit command "nope"/);
});

async function spawnWitness(vkey: string, entry = ['src/witness/main.ts'], { log = `${ORIGIN}=${vkey}`, dataDir = dir } = {}): Promise<string> {
  const child = spawn(process.execPath, [...entry, '--data-dir', dataDir, '--port', '0', '--log', log], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(child);
  let out = '';
  child.stdout.setEncoding('utf8');
  // A witness that exits before it listens fails the test at once, not at the test's timeout.
  const exited = once(child, 'exit').then(([code]) => { throw new Error(`the witness exited (${code}) before listening: ${out}`); });
  for (;;) {
    const [chunk] = (await Promise.race([once(child.stdout, 'data'), exited])) as [string];
    out += chunk;
    const m = /listening on (\S+)/.exec(out);
    if (m) { exited.catch(() => {}); return m[1] as string; }
  }
}

test('two witness processes on one data directory still never both advance from the same size', async () => {
  const s = new TestSigner();
  const pub = await s.publicKey('log');
  const signer = ed25519NoteSigner(ORIGIN, pub, (m) => s.sign('log', m));
  const store = new Map<string, StoredNode>();
  const read = (l: number, i: number) => store.get(nodeKey(l, i))?.hash;
  const roots: Uint8Array[] = [];
  let size = 0;
  for (let i = 0; i < 64; i++) {
    const r = appendLeaves(size, [leafHash(new TextEncoder().encode(`e${i}`))], read);
    for (const x of r.nodes) store.set(nodeKey(x.level, x.index), x);
    size = r.size;
    roots[size] = r.root;
  }
  const cp = (n: number) => signCheckpoint({ origin: ORIGIN, size: n, root: roots[n] as Uint8Array }, signer);
  const vkey = formatVkey(ORIGIN, SIG_TYPE_ED25519, pub);
  const [a, b] = await Promise.all([spawnWitness(vkey), spawnWitness(vkey)]);
  assert.equal((await addCheckpoint(a, 0, [], await cp(3))).kind, 'cosigned');
  const sizes = Array.from({ length: 60 }, (_, i) => 4 + i);
  const results = await Promise.all(sizes.map(async (n, i) => addCheckpoint(i % 2 ? a : b, 3, consistencyProof(3, n, read), await cp(n))));
  const accepted = sizes.filter((_, i) => results[i]?.kind === 'cosigned');
  assert.equal(accepted.length, 1, `exactly one advance from 3, got ${accepted.join(',')}`);
  for (const r of results) if (r.kind !== 'cosigned') assert.deepEqual(r, { kind: 'conflict', size: accepted[0] });
  // Both processes agree on what is held.
  for (const url of [a, b]) assert.deepEqual(await addCheckpoint(url, 0, [], await cp(64)), { kind: 'conflict', size: accepted[0] });
});

test('gavel witness --log VKEY whose key name holds \'=\' cosigns for that name as origin', async () => {
  const origin = 'gavel.test/audit=eu';
  const s = new TestSigner();
  const pub = await s.publicKey('log');
  const vkey = formatVkey(origin, SIG_TYPE_ED25519, pub);
  const url = await spawnWitness(vkey, [MAIN, 'witness'], { log: vkey, dataDir: mkdtempSync(join(dir, 'eq-name-')) });
  const root = appendLeaves(0, [leafHash(new TextEncoder().encode('e0'))], () => undefined).root;
  const checkpoint = await signCheckpoint({ origin, size: 1, root }, ed25519NoteSigner(origin, pub, (m) => s.sign('log', m)));
  assert.equal((await addCheckpoint(url, 0, [], checkpoint)).kind, 'cosigned');
});

// Preloaded: once the witness has said where it listens, it is held there half a second, so a
// signal sent on reading that line arrives before anything the witness does after saying it.
const HELD_AFTER_LISTENING = `const write = process.stdout.write.bind(process.stdout);
process.stdout.write = (chunk, ...rest) => { const r = write(chunk, ...rest); if (String(chunk).includes('listening on')) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 500); return r; };`;

test('gavel witness stops cleanly on SIGTERM, SIGINT and SIGHUP, even sent as soon as it says it listens: exit 0, its port closed', async () => {
  const vkey = formatVkey(ORIGIN, SIG_TYPE_ED25519, new Uint8Array(32).fill(9));
  const preload = join(dir, 'held-after-listening.mjs');
  writeFileSync(preload, HELD_AFTER_LISTENING);
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
    const url = await spawnWitness(vkey, ['--import', preload, MAIN, 'witness']);
    const child = children[children.length - 1]!;
    const exited = once(child, 'exit');
    child.kill(signal);
    assert.deepEqual(await exited, [0, null], signal);
    await assert.rejects(fetch(`${url}/`), 'nothing listens there any more');
  }
});

test('what a standalone witness creates is its owner\'s alone (files 0600, directories 0700), started as gavel witness or as its module', async () => {
  const vkey = formatVkey(ORIGIN, SIG_TYPE_ED25519, new Uint8Array(32).fill(11));
  for (const entry of [[MAIN, 'witness'], ['src/witness/main.ts']]) {
    const dataDir = join(mkdtempSync(join(dir, 'modes-')), 'w');
    const url = await spawnWitness(vkey, entry, { dataDir });
    const child = children[children.length - 1]!;
    // The database and its WAL exist once it has served a request that reads it.
    await (await fetch(`${url}/`)).arrayBuffer();
    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    await exited;
    assert.equal(statSync(dataDir).mode & 0o777, 0o700, `${entry.join(' ')}: ${dataDir}`);
    const files = readdirSync(dataDir);
    assert.ok(files.includes('witness.sqlite'), files.join(', '));
    for (const f of files) assert.equal(statSync(join(dataDir, f)).mode & 0o777, 0o600, `${entry.join(' ')}: ${f}`);
  }
});
