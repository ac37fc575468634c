// `gavel up`'s witness is a process of its own (the audit-log issue: "a separate process with its own
// key and its own storage"), not the log's: its key never sits in the memory of what it vouches for.
// It ends with `gavel up`, however that ends, so a restart after kill -9 finds its port free.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { once } from 'node:events';
import { connect } from 'node:net';
import { MAIN } from '../support/process.ts';
import { howItEnded } from '../../src/cli/local-witness.ts';
import { startWitness, type RunningWitness } from '../../src/witness/server.ts';
import { formatVkey, SIG_TYPE_ED25519 } from '../../src/domain/auditlog/note.ts';

async function up(dataDir: string): Promise<{ pid: number; witnessUrl: string; lines: string[]; kill(signal: NodeJS.Signals): void }> {
  const started = await start('up', dataDir);
  const m = /^(http:\/\/\S+) \(local/.exec(started.witness);
  if (!m) { started.kill('SIGKILL'); throw new Error(`no local witness: ${started.witness}`); }
  return { ...started, witnessUrl: m[1]! };
}

/** `gavel <command>` on dataDir, once its banner names the witness (what follows "Witness:"). */
function start(command: 'up' | 'serve', dataDir: string, env: Record<string, string> = {}): Promise<{ pid: number; witness: string; lines: string[]; kill(signal: NodeJS.Signals): void }> {
  const child = spawn(process.execPath, [MAIN, command], {
    env: { ...process.env, GAVEL_DATABASE_URL: undefined, GAVEL_DATA_DIR: dataDir, GAVEL_PORT: '0', GAVEL_WITNESS_PORT: '0', GAVEL_LOG_LEVEL: 'error', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (d) => { stderr += d; });
  const lines: string[] = [];
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`gavel ${command} exited with ${code}: ${stderr}`)));
    createInterface({ input: child.stdout! }).on('line', (line) => {
      lines.push(line);
      const m = /Witness:\s+(.*)$/.exec(line);
      if (m) resolve({ pid: child.pid!, witness: m[1]!, lines, kill: (s) => child.kill(s) });
    });
  });
}

// ps exits 1 when it lists nothing.
const childrenOf = (pid: number) => spawnSync('ps', ['-o', 'pid=', '--ppid', String(pid)], { encoding: 'utf8' }).stdout.split('\n').map((s) => Number(s.trim())).filter((n) => n > 0);
const alive = (pid: number) => existsSync(`/proc/${pid}`) && !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'));

test('gavel up runs its witness as a child process with its own storage, which ends when gavel up is killed', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gavel-local-witness-'));
  try {
    const first = await up(dir);
    const [witness, ...rest] = childrenOf(first.pid);
    assert.ok(witness !== undefined && rest.length === 0, 'one child process');
    assert.match(readFileSync(`/proc/${witness}/cmdline`, 'utf8').replaceAll('\0', ' '), / witness --data-dir \S+\/witness /);
    const answer = await (await fetch(`${first.witnessUrl}/`)).json() as { vkey: string };
    assert.match(answer.vkey, /^localhost\/gavel-witness\+/);
    assert.ok(existsSync(join(dir, 'witness', 'witness-key.pem')), 'its key in its own directory');
    first.kill('SIGKILL');
    for (let i = 0; i < 50 && alive(witness); i++) await sleep(100);
    assert.equal(alive(witness), false, 'the witness ended with its parent');
    // A restart finds the ports free and the same witness key.
    const second = await up(dir);
    assert.equal(((await (await fetch(`${second.witnessUrl}/`)).json()) as { vkey: string }).vkey, answer.vkey);
    const [again] = childrenOf(second.pid);
    second.kill('SIGTERM');
    for (let i = 0; i < 100 && (alive(second.pid) || alive(again!)); i++) await sleep(100);
    assert.equal(alive(again!), false, 'a graceful stop stops the witness too');
  } finally { rmSync(dir, { recursive: true, force: true }); }
});

test('a local witness that dies while gavel up runs is started again on the same URL, with the same key and state', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gavel-local-witness-'));
  try {
    const running = await up(dir);
    try {
      const [witness] = childrenOf(running.pid);
      const before = await (await fetch(`${running.witnessUrl}/`)).json() as { vkey: string };
      process.kill(witness!, 'SIGKILL');
      let again: number | undefined;
      for (let i = 0; i < 100 && again === undefined; i++) {
        await sleep(100);
        again = childrenOf(running.pid).find((pid) => pid !== witness && alive(pid));
      }
      assert.ok(again !== undefined, 'a new witness process');
      let answer: { vkey: string } | undefined;
      for (let i = 0; i < 100 && answer === undefined; i++) {
        answer = await fetch(`${running.witnessUrl}/`).then((r) => r.json() as Promise<{ vkey: string }>, () => undefined);
        if (answer === undefined) await sleep(100);
      }
      assert.equal(answer?.vkey, before.vkey, 'the same witness, where the log looks for it');
      // The log says what happened to it, and what to look at (not "exited (SIGKILL)").
      const logged = running.lines.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { msg: string });
      assert.ok(logged.some((l) => l.msg === `the local witness was killed by SIGKILL (a kill -9, or the kernel's out-of-memory killer: \`dmesg\` or \`journalctl -k\` lists its kills; if memory is short, give the host more); starting it again on ${running.witnessUrl}, with the same key and storage`),
        running.lines.join('\n'));
      running.kill('SIGTERM');
      for (let i = 0; i < 100 && (alive(running.pid) || alive(again)); i++) await sleep(100);
      assert.equal(alive(again), false, 'a graceful stop stops the restarted witness too');
    } finally { running.kill('SIGKILL'); }
  } finally { rmSync(dir, { recursive: true, force: true }); }
});

test('gavel serve starts no witness, nor does gavel up given GAVEL_WITNESS_URL: it uses that one', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gavel-local-witness-'));
  let other: RunningWitness | undefined;
  try {
    const served = await start('serve', join(dir, 'serve'));
    try {
      assert.equal(served.witness, 'none (checkpoints are signed, not witnessed)');
      assert.deepEqual(childrenOf(served.pid), [], 'no witness process');
    } finally { served.kill('SIGKILL'); }
    // A witness of the operator's own, trusting nothing of this installation yet: only its URL and key matter here.
    other = await startWitness({ dataDir: join(dir, 'other-witness'), logs: [{ origin: 'example.test/log', vkeys: [formatVkey('example.test/log', SIG_TYPE_ED25519, new Uint8Array(32).fill(9))] }] });
    const given = await start('up', join(dir, 'up'), { GAVEL_WITNESS_URL: other.url, GAVEL_WITNESS_VKEY: other.publicKeyVkey });
    try {
      assert.equal(given.witness, other.url);
      assert.deepEqual(childrenOf(given.pid), [], 'no witness process');
    } finally { given.kill('SIGKILL'); }
  } finally {
    await other?.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

// Ctrl-C in a terminal (and systemd's stop, and a terminal's hang-up) signals the whole process
// group, the witness with gavel up. The witness is gavel up's to stop, after the log's last
// checkpoint: a witness that stopped on its own signal was taken for a crash ("the local witness
// exited… starting it again"), started anew during the shutdown, and missed the last checkpoint.
for (const signal of ['SIGINT', 'SIGHUP'] as const) test(`${signal} to gavel up's process group: the witness outlives the shutdown, is not restarted, and cosigns the last checkpoint`, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gavel-local-witness-'));
  const child = spawn(process.execPath, [MAIN, 'up'], {
    env: { ...process.env, GAVEL_DATABASE_URL: undefined, GAVEL_DATA_DIR: dir, GAVEL_PORT: '0', GAVEL_WITNESS_PORT: '0', GAVEL_LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'], detached: true,
  });
  const lines: string[] = [];
  const seen = (re: RegExp) => new Promise<string>((resolve) => {
    const hit = lines.find((l) => re.test(l));
    if (hit) return resolve(hit);
    const check = (l: string) => { if (re.test(l)) { rl.off('line', check); resolve(l); } };
    rl.on('line', check);
  });
  const rl = createInterface({ input: child.stdout! });
  rl.on('line', (l) => lines.push(l));
  try {
    const api = /API:\s+(http:\/\/\S+)\/v1/.exec(await seen(/API:/))![1]!;
    const witnessUrl = /Witness:\s+(http:\/\/\S+) \(local/.exec(await seen(/Witness:/))![1]!;
    const [witness] = childrenOf(child.pid!);
    // A request whose body is still arriving holds the shutdown open.
    const { port } = new URL(api);
    const socket = connect(Number(port), '127.0.0.1');
    await once(socket, 'connect');
    const body = JSON.stringify({ name: 'nobody', password: 'not-the-password' });
    socket.write(`POST /v1/console/login HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 5)}`);
    await seen(/incoming request/);
    const exited = once(child, 'exit');
    process.kill(-child.pid!, signal);
    await Promise.race([seen(/shutting down/), exited.then(([code, sig]) => { throw new Error(`gavel up ended (${sig ?? code}) without stopping gracefully`); })]);
    const answer = await fetch(`${witnessUrl}/`).then((r) => r.status, (e: Error) => e.message);
    socket.end(body.slice(5));
    assert.deepEqual(await exited, [0, null]);
    assert.equal(answer, 200, 'the witness still answers while gavel up shuts down');
    assert.deepEqual(lines.filter((l) => /"level":(40|50)/.test(l)), [], 'no warning or error: no witness restart, the last checkpoint cosigned');
    for (let i = 0; i < 50 && alive(witness!); i++) await sleep(100);
    assert.equal(alive(witness!), false, 'the witness stopped with gavel up');
  } finally {
    try { process.kill(-child.pid!, 'SIGKILL'); } catch { /* already gone */ }
    rmSync(dir, { recursive: true, force: true });
  }
});

test('how a witness process ended is said in words: a SIGKILL with where to look, a crash, another signal, an exit code', () => {
  assert.match(howItEnded(null, 'SIGKILL'), /^was killed by SIGKILL \(a kill -9, or the kernel's out-of-memory killer: `dmesg`/);
  assert.equal(howItEnded(null, 'SIGSEGV'), 'crashed (SIGSEGV)');
  assert.equal(howItEnded(null, 'SIGUSR2'), 'was killed by SIGUSR2, sent by another process');
  assert.equal(howItEnded(3, null), 'exited with code 3');
});
