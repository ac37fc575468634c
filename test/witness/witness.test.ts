import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startWitness, type RunningWitness } from '../../src/witness/server.ts';
import { addCheckpoint, holdsRoot } from '../../src/witness/client.ts';
import { WITNESS_KEY_FILE } from '../../src/witness/key.ts';
import { WitnessStore } from '../../src/witness/store.ts';
import { leafHash } from '../../src/domain/auditlog/hash.ts';
import { appendLeaves, consistencyProof, nodeKey, type StoredNode } from '../../src/domain/auditlog/tree.ts';
import { signCheckpoint } from '../../src/domain/auditlog/checkpoint.ts';
import { verifyCosignatures } from '../../src/domain/auditlog/cosignature.ts';
import { ed25519NoteSigner, formatVkey, parseVkey, SIG_TYPE_ED25519, type NoteSigner } from '../../src/domain/auditlog/note.ts';
import { TestSigner } from '../domain/auditlog/support.ts';

const ORIGIN = 'gavel.test/audit';
const dirs: string[] = [];
const running: RunningWitness[] = [];
after(async () => {
  for (const w of running) await w.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A log: an in-memory node store grown through appendLeaves, signing checkpoints with a real key. */
class TestLog {
  readonly store = new Map<string, StoredNode>();
  readonly roots: Uint8Array[] = [];
  size = 0;
  readonly read = (l: number, i: number) => this.store.get(nodeKey(l, i))?.hash;
  readonly signer: NoteSigner;
  readonly vkey: string;
  constructor(signer: NoteSigner, vkey: string) {
    this.signer = signer;
    this.vkey = vkey;
  }
  static async create(keyName = 'log', tag = ''): Promise<TestLog> {
    const s = new TestSigner();
    const pub = await s.publicKey(keyName);
    const log = new TestLog(ed25519NoteSigner(ORIGIN, pub, (m) => s.sign(keyName, m)), formatVkey(ORIGIN, SIG_TYPE_ED25519, pub));
    log.tag = tag;
    return log;
  }
  tag = '';
  grow(n: number): this {
    for (let i = 0; i < n; i++) {
      const r = appendLeaves(this.size, [leafHash(new TextEncoder().encode(`${this.tag}event ${this.size}`))], this.read);
      for (const x of r.nodes) this.store.set(nodeKey(x.level, x.index), x);
      this.size = r.size;
      this.roots[r.size] = r.root;
    }
    return this;
  }
  checkpoint(size = this.size, origin = ORIGIN): Promise<string> {
    return signCheckpoint({ origin, size, root: this.roots[size] as Uint8Array }, this.signer);
  }
  proof(m: number, n = this.size): Uint8Array[] {
    return consistencyProof(m, n, this.read);
  }
}

async function start(dataDir: string, log: TestLog, port?: number): Promise<RunningWitness> {
  const w = await startWitness({ dataDir, port, name: 'witness.test/w1', logs: [{ origin: ORIGIN, vkeys: [log.vkey] }], now: () => 1_750_000_000_000 });
  running.push(w);
  return w;
}

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'gavel-witness-'));
  dirs.push(d);
  return d;
}

test('the witness cosigns a first checkpoint, then consistent growth; its cosignature verifies', async () => {
  const log = (await TestLog.create()).grow(5);
  const w = await start(tempDir(), log);
  assert.match(w.url, /^http:\/\/127\.0\.0\.1:\d+$/);
  const witnessKey = parseVkey(w.publicKeyVkey);

  const first = await addCheckpoint(w.url, 0, [], await log.checkpoint());
  assert.equal(first.kind, 'cosigned');
  const note5 = await log.checkpoint();
  const cos = first.kind === 'cosigned' ? first.cosignatures : [];
  const verified = verifyCosignatures(note5 + cos.join(''), [witnessKey]);
  assert.equal(verified.length, 1);
  assert.equal(verified[0]?.timestamp, 1_750_000_000);

  log.grow(12);
  const grown = await addCheckpoint(w.url, 5, log.proof(5), await log.checkpoint());
  assert.equal(grown.kind, 'cosigned');
  assert.equal(await holdsRoot(w.url, ORIGIN, log.roots[5] as Uint8Array), 'yes');
  assert.equal(await holdsRoot(w.url, ORIGIN, log.roots[17] as Uint8Array), 'yes');
  assert.equal(await holdsRoot(w.url, ORIGIN, log.roots[9] as Uint8Array), 'no', 'never submitted');
  assert.equal(await holdsRoot(w.url, 'other/origin', log.roots[17] as Uint8Array), 'no');

  // The same checkpoint again is cosigned again (idempotent), without changing state.
  const again = await addCheckpoint(w.url, 17, [], await log.checkpoint());
  assert.equal(again.kind, 'cosigned');
});

test('refusals: fork 422, rollback 400/409, wrong old size 409 with size, bad signature 403, unknown origin 404', async () => {
  const log = (await TestLog.create()).grow(10);
  const w = await start(tempDir(), log);
  assert.equal((await addCheckpoint(w.url, 0, [], await log.checkpoint())).kind, 'cosigned');

  // Fork: same key, different history from leaf 0, presented as growth from 10.
  const fork = await TestLog.create('log', 'fork ');
  Object.assign(fork, { signer: log.signer });
  fork.grow(14);
  assert.deepEqual(await addCheckpoint(w.url, 10, fork.proof(10), await fork.checkpoint()), { kind: 'refused', status: 422, reason: 'consistency proof does not verify' });
  // Same size, different root: 409 (the witness's size in the body).
  assert.deepEqual(await addCheckpoint(w.url, 10, [], await fork.checkpoint(10)), { kind: 'conflict', size: 10 });
  // Neither refused checkpoint is one the witness says it cosigned.
  for (const size of [14, 10]) assert.equal(await holdsRoot(w.url, ORIGIN, fork.roots[size] as Uint8Array), 'no', `the fork's root at ${size}`);

  // Rollback: a smaller checkpoint.
  const rb = await addCheckpoint(w.url, 10, [], await log.checkpoint(6));
  assert.equal(rb.kind === 'refused' && rb.status, 400);
  assert.deepEqual(await addCheckpoint(w.url, 4, log.proof(4, 6), await log.checkpoint(6)), { kind: 'conflict', size: 10 });

  // Wrong old size for valid growth: 409 with the held size, then the retry succeeds.
  log.grow(3);
  assert.deepEqual(await addCheckpoint(w.url, 7, log.proof(7), await log.checkpoint()), { kind: 'conflict', size: 10 });
  const raw = await fetch(`${w.url}/add-checkpoint`, { method: 'POST', body: `old 0\n\n${await log.checkpoint()}` });
  assert.equal(raw.status, 409);
  assert.equal(raw.headers.get('content-type'), 'text/x.tlog.size');
  assert.equal(await raw.text(), '10\n');
  assert.equal((await addCheckpoint(w.url, 10, log.proof(10), await log.checkpoint())).kind, 'cosigned');

  // Signed by a key the witness does not trust for this origin: 403. Tampered size: 403.
  const stranger = (await TestLog.create('stranger')).grow(20);
  const forged = await addCheckpoint(w.url, 13, stranger.proof(13), await stranger.checkpoint());
  assert.equal(forged.kind === 'refused' && forged.status, 403);
  const tampered = (await log.checkpoint()).replace('\n13\n', '\n14\n');
  const t = await addCheckpoint(w.url, 13, [], tampered);
  assert.equal(t.kind === 'refused' && t.status, 403);

  // Unknown origin: 404.
  const unknown = await addCheckpoint(w.url, 0, [], await log.checkpoint(13, 'elsewhere.test/log'));
  assert.equal(unknown.kind === 'refused' && unknown.status, 404);

  // Malformed bodies: 400.
  for (const body of ['', 'old x\n\n', `old 13\nnot-base64\n\n${await log.checkpoint()}`, Buffer.from([0xff, 0xfe])]) {
    const res = await fetch(`${w.url}/add-checkpoint`, { method: 'POST', body });
    assert.equal(res.status, 400);
  }
  // Nothing above moved the witness: it still holds 13.
  assert.deepEqual(await addCheckpoint(w.url, 0, [], await log.checkpoint()), { kind: 'conflict', size: 13 });
});

test('concurrent submissions cannot fork or roll the witness back', async () => {
  const log = (await TestLog.create()).grow(4);
  const w = await start(tempDir(), log);
  assert.equal((await addCheckpoint(w.url, 0, [], await log.checkpoint())).kind, 'cosigned');
  log.grow(40);
  const sizes = Array.from({ length: 40 }, (_, i) => 5 + i);
  const results = await Promise.all(sizes.map(async (n) => addCheckpoint(w.url, 4, log.proof(4, n), await log.checkpoint(n))));
  const accepted = sizes.filter((_, i) => results[i]?.kind === 'cosigned');
  assert.equal(accepted.length, 1, 'exactly one request can advance from size 4');
  const held = accepted[0] as number;
  for (const r of results) if (r.kind !== 'cosigned') assert.deepEqual(r, { kind: 'conflict', size: held });
  assert.deepEqual(await addCheckpoint(w.url, 0, [], await log.checkpoint()), { kind: 'conflict', size: held });
});

test('a restarted witness keeps its key and its state; a stopped witness is unavailable', async () => {
  const dir = tempDir();
  const log = (await TestLog.create()).grow(8);
  const w1 = await start(dir, log);
  assert.equal((await addCheckpoint(w1.url, 0, [], await log.checkpoint())).kind, 'cosigned');
  assert.equal(statSync(join(dir, WITNESS_KEY_FILE)).mode & 0o777, 0o600);
  const url1 = w1.url;
  await w1.close();

  // Stopped: the client reports unavailable, never "no" or a refusal.
  assert.equal(await holdsRoot(url1, ORIGIN, log.roots[8] as Uint8Array, { timeoutMs: 2000 }), 'unavailable');
  const down = await addCheckpoint(url1, 8, [], await log.checkpoint(), { timeoutMs: 2000 });
  assert.equal(down.kind, 'unavailable');

  const w2 = await start(dir, log);
  assert.equal(w2.publicKeyVkey, w1.publicKeyVkey, 'same key after restart');
  assert.deepEqual(await addCheckpoint(w2.url, 0, [], await log.checkpoint()), { kind: 'conflict', size: 8 });
  assert.equal(await holdsRoot(w2.url, ORIGIN, log.roots[8] as Uint8Array), 'yes');
  log.grow(2);
  assert.equal((await addCheckpoint(w2.url, 8, log.proof(8), await log.checkpoint())).kind, 'cosigned');
});

test('GET /roots validates its input and GET / names the witness', async () => {
  const log = (await TestLog.create()).grow(1);
  const w = await start(tempDir(), log);
  assert.equal((await fetch(`${w.url}/roots/zz?origin=${ORIGIN}`)).status, 400);
  assert.equal((await fetch(`${w.url}/roots/${'00'.repeat(32)}`)).status, 400);
  assert.equal((await fetch(`${w.url}/roots/${'00'.repeat(32)}?origin=${ORIGIN}`)).status, 404);
  const info = (await (await fetch(`${w.url}/`)).json()) as { name: string; vkey: string; origins: string[] };
  assert.deepEqual(info, { name: 'witness.test/w1', vkey: w.publicKeyVkey, origins: [ORIGIN] });
});

test('a witness of two logs keeps each origin\'s checkpoint apart', async () => {
  const a = (await TestLog.create('a', 'a ')).grow(5);
  const b = (await TestLog.create('b', 'b ')).grow(3);
  const OTHER = 'gavel.test/other';
  const w = await startWitness({ dataDir: tempDir(), logs: [{ origin: ORIGIN, vkeys: [a.vkey] }, { origin: OTHER, vkeys: [b.vkey] }] });
  running.push(w);
  assert.equal((await addCheckpoint(w.url, 0, [], await a.checkpoint())).kind, 'cosigned');
  // The other log's first checkpoint starts from nothing, not from the size the first log reached.
  assert.equal((await addCheckpoint(w.url, 0, [], await b.checkpoint(3, OTHER))).kind, 'cosigned');
  b.grow(4);
  assert.equal((await addCheckpoint(w.url, 3, b.proof(3), await b.checkpoint(7, OTHER))).kind, 'cosigned');
  assert.deepEqual(await addCheckpoint(w.url, 3, [], await a.checkpoint()), { kind: 'conflict', size: 5 });
});

test('the client reads only what the protocol says: a malformed 200, a 409 without its size type, 5xx, redirects and other statuses', async () => {
  const { createServer } = await import('node:http');
  let answer: { status: number; type?: string; body: string; location?: string } = { status: 200, body: '' };
  const server = createServer((req, res) => {
    // Where a redirect leads: an answer that would read as a cosignature. Any path but the protocol's: 404.
    if (req.url === '/elsewhere') { res.writeHead(200).end(`\u2014 w ${Buffer.alloc(76).toString('base64')}\n`); return; }
    if (req.url !== '/add-checkpoint' && !req.url?.startsWith('/roots/')) { res.writeHead(404).end(); return; }
    res.writeHead(answer.status, { 'content-type': answer.type ?? 'text/plain', ...(answer.location ? { location: answer.location } : {}) }).end(answer.body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const submit = () => addCheckpoint(`${url}/`, 0, [], 'note\n');
  try {
    answer = { status: 200, body: 'hello\n' };
    assert.equal((await submit()).kind, 'unavailable', 'a 200 whose lines are not signature lines');
    answer = { status: 200, body: '' };
    assert.equal((await submit()).kind, 'unavailable', 'a 200 with no line at all');
    answer = { status: 200, body: `\u2014 w ${Buffer.alloc(76).toString('base64')}\nhello\n` };
    assert.equal((await submit()).kind, 'unavailable', 'a 200 with a signature line and another');
    for (const body of ['\n', '05\n', '5', '-1\n', '5\n6\n']) {
      answer = { status: 409, type: 'text/x.tlog.size', body };
      assert.equal((await submit()).kind, 'refused', `a 409 whose body is not one size: ${JSON.stringify(body)}`);
    }
    answer = { status: 409, body: '5\n' };
    assert.equal((await submit()).kind, 'refused', 'a 409 without text/x.tlog.size names no size');
    answer = { status: 409, type: 'text/x.tlog.size', body: '5\n' };
    assert.deepEqual(await submit(), { kind: 'conflict', size: 5 }, 'and a trailing slash on the URL is fine');
    answer = { status: 500, body: 'oops' };
    assert.equal((await submit()).kind, 'unavailable');
    answer = { status: 307, body: '', location: `${url}/elsewhere` };
    assert.equal((await submit()).kind, 'unavailable', 'redirects are not followed');
    answer = { status: 204, body: '' };
    assert.equal(await holdsRoot(url, ORIGIN, new Uint8Array(32)), 'unavailable', 'only 200 is a cosigned checkpoint');
    answer = { status: 307, body: '', location: `${url}/elsewhere` };
    assert.equal(await holdsRoot(url, ORIGIN, new Uint8Array(32)), 'unavailable', 'a lookup is not redirected to another answer either');
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
});

test('a witness key file holding a key of another type is refused, not used', async () => {
  const { generateKeyPairSync } = await import('node:crypto');
  const { writeFileSync } = await import('node:fs');
  const { loadOrCreateWitnessKey, WitnessKeyDamaged } = await import('../../src/witness/key.ts');
  const dir = tempDir();
  writeFileSync(join(dir, WITNESS_KEY_FILE), generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'pem', type: 'pkcs8' }));
  assert.throws(() => loadOrCreateWitnessKey(dir), (e) => e instanceof WitnessKeyDamaged && /not an Ed25519 key/.test(e.message));
});

test('a witness with a bad name or a log key of another type does not start', async () => {
  const log = await TestLog.create();
  await assert.rejects(startWitness({ dataDir: tempDir(), name: 'my witness', logs: [{ origin: ORIGIN, vkeys: [log.vkey] }] }), /key name must be non-empty/);
  const witnessKey = formatVkey('w.example', 0x04, new Uint8Array(32).fill(7));
  await assert.rejects(startWitness({ dataDir: tempDir(), logs: [{ origin: ORIGIN, vkeys: [witnessKey] }] }), /vkeys must be Ed25519/);
});

test('GET /roots takes a root in either case and refuses a short one or an empty origin; a body over 256 KiB is refused', async () => {
  const log = (await TestLog.create()).grow(3);
  const w = await start(tempDir(), log);
  assert.equal((await addCheckpoint(w.url, 0, [], await log.checkpoint())).kind, 'cosigned');
  const hex = Buffer.from(log.roots[3] as Uint8Array).toString('hex');
  assert.equal((await fetch(`${w.url}/roots/${hex.toUpperCase()}?origin=${ORIGIN}`)).status, 200);
  assert.equal((await fetch(`${w.url}/roots/${hex.slice(2)}?origin=${ORIGIN}`)).status, 400, 'a root of 31 bytes');
  assert.equal((await fetch(`${w.url}/roots/${hex}?origin=`)).status, 400, 'an empty origin');
  const big = await fetch(`${w.url}/add-checkpoint`, { method: 'POST', body: `old 0\n\n${await log.checkpoint()}${'x'.repeat(256 * 1024)}` });
  assert.equal(big.status, 413);
});

test('the cosignature timestamp is the second the witness signed in, never one still to come', async () => {
  const log = (await TestLog.create()).grow(2);
  const w = await startWitness({ dataDir: tempDir(), logs: [{ origin: ORIGIN, vkeys: [log.vkey] }], now: () => 1_750_000_000_999 });
  running.push(w);
  const r = await addCheckpoint(w.url, 0, [], await log.checkpoint());
  const lines = r.kind === 'cosigned' ? r.cosignatures : [];
  assert.equal(verifyCosignatures(await log.checkpoint() + lines.join(''), [parseVkey(w.publicKeyVkey)])[0]?.timestamp, 1_750_000_000);
});

test('the witness database is in WAL mode with synchronous=FULL, as docs/audit-log.md says', () => {
  const store = new WitnessStore(tempDir());
  try {
    assert.equal(store.db.pragma('journal_mode', { simple: true }), 'wal');
    assert.equal(store.db.pragma('synchronous', { simple: true }), 2, 'FULL');
  } finally { store.close(); }
});

test('a data directory the witness creates is its owner\'s alone, whatever the umask', async () => {
  const { loadOrCreateWitnessKey } = await import('../../src/witness/key.ts');
  const dir = join(tempDir(), 'new', 'witness');
  const umask = process.umask(0o022);
  try { loadOrCreateWitnessKey(dir); } finally { process.umask(umask); }
  assert.equal(statSync(dir).mode & 0o777, 0o700);
  assert.equal(statSync(join(dir, WITNESS_KEY_FILE)).mode & 0o777, 0o600);
});

test('a witness on IPv6 loopback says a URL that reaches it; two entries for one origin trust both keys; a body not UTF-8 is 400', async () => {
  const a = (await TestLog.create('a')).grow(2);
  const b = await TestLog.create('b');
  Object.assign(b, { store: a.store, roots: a.roots, size: a.size });
  const w = await startWitness({ dataDir: tempDir(), host: '::1', logs: [{ origin: ORIGIN, vkeys: [a.vkey] }, { origin: ORIGIN, vkeys: [b.vkey] }] });
  running.push(w);
  assert.match(w.url, /^http:\/\/\[::1\]:\d+$/);
  assert.equal((await addCheckpoint(w.url, 0, [], await a.checkpoint())).kind, 'cosigned', 'signed by the first entry\'s key');
  assert.equal((await addCheckpoint(w.url, 2, [], await b.checkpoint())).kind, 'cosigned', 'the same checkpoint signed by the second entry\'s key');
  const res = await fetch(`${w.url}/add-checkpoint`, { method: 'POST', body: Buffer.concat([Buffer.from('old 0\n\n'), Buffer.from([0xff]), Buffer.from(await a.checkpoint())]) });
  assert.equal(res.status, 400);
  assert.equal(await res.text(), 'body is not UTF-8\n');
});
