// Instances sharing a database sign with the keys it recorded: the first use of a key records its
// public half, every instance verifies against that record, and one holding another key under the
// name signs nothing (signer/pinned.ts).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, copyFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { backends } from '../support/backends.ts';
import { startService, type TestService } from '../support/service.ts';
import { LocalSigner } from '../../src/signer/local.ts';
import { PinnedSigner, SigningKeyMismatch } from '../../src/signer/pinned.ts';
import { createService } from '../../src/service.ts';
import { loadConfig } from '../../src/config/config.ts';
import { LOG_KEY } from '../../src/services/auditlog/log.ts';
import { chainHoldingLink, permitKeyName } from '../../src/services/permits/permits.ts';
import { permitCommitment } from '../../src/domain/permit/index.ts';
import { activatePolicy, ALLOW_PAYMENTS, issue, newAgent } from '../support/authorize.ts';

const keysDir = () => mkdtempSync(join(tmpdir(), 'gavel-keys-'));

for (const backend of backends()) {
  describe(`pinned signing keys on ${backend.name}`, () => {
    let ts: Awaited<ReturnType<typeof backend.open>>;
    before(async () => { ts = await backend.open(); });
    after(async () => { await ts.cleanup(); });

    test('the first key used under a name is recorded; another instance verifies with it and signs nothing', async () => {
      const first = new PinnedSigner(new LocalSigner(keysDir()), ts.store.db);
      const secondDir = keysDir();
      const secondKeys = new LocalSigner(secondDir);
      const second = new PinnedSigner(secondKeys, ts.store.db);
      const recorded = await first.publicKey('permit-a');
      assert.deepEqual(await second.publicKey('permit-a'), recorded, 'the second instance verifies against the recorded key');
      assert.deepEqual(readdirSync(secondDir), [], 'verifying against the record makes no key of its own');
      assert.equal((await first.sign('permit-a', new Uint8Array([1]))).length, 64);
      const refused = await second.sign('permit-a', new Uint8Array([1])).catch((e: unknown) => e);
      assert.ok(refused instanceof SigningKeyMismatch);
      assert.equal(refused.status, 503);
      assert.equal(refused.code, 'signing_key_mismatch');
      assert.match(refused.message, /"permit-a".*copy the first instance's <data dir>\/keys/);
      // It holds a key of its own under that name: what it verifies with is the record, not that key.
      assert.notDeepEqual(await secondKeys.publicKey('permit-a'), recorded);
    });

    test('two instances recording a new key at once agree on the one that was recorded first', async () => {
      const signers = Array.from({ length: 4 }, () => new PinnedSigner(new LocalSigner(keysDir()), ts.store.db));
      const keys = await Promise.all(signers.map((s) => s.publicKey('permit-race')));
      for (const k of keys) assert.deepEqual(k, keys[0]);
      const held = await Promise.all(signers.map((s) => s.assertHeld('permit-race').then(() => true, () => false)));
      assert.equal(held.filter(Boolean).length, 1, 'exactly one instance holds the recorded key');
    });

    test('a database failure at a key\'s first use is not remembered: the next signature tries again', async () => {
      const signer = new PinnedSigner(new LocalSigner(keysDir()), ts.store.db);
      await sql`alter table signer_keys rename to signer_keys_away`.execute(ts.store.db);
      try {
        const failed = await signer.sign('permit-blip', new Uint8Array([1])).catch((e: unknown) => e);
        assert.ok(failed instanceof Error && !(failed instanceof SigningKeyMismatch), String(failed));
      } finally {
        await sql`alter table signer_keys_away rename to signer_keys`.execute(ts.store.db);
      }
      assert.equal((await signer.sign('permit-blip', new Uint8Array([1]))).length, 64);
      assert.equal((await signer.publicKey('permit-blip')).length, 32);
    });
  });
}

// A second instance on the same PostgreSQL database, as a deployment runs it.
const pg = backends().find((b) => b.name === 'postgres');
describe('a second instance on one PostgreSQL database', { skip: !pg && 'PostgreSQL not configured' }, () => {
  let first: TestService;
  before(async () => { first = await startService(pg!); });
  after(async () => { await first.stop(); });
  const second = (dataDir: string) => createService(loadConfig({}, { dataDir, logLevel: 'silent' }), { store: first.ts.reopen(), logger: false });

  test('without the installation\'s keys it refuses to start, naming the key', async () => {
    await assert.rejects(second(mkdtempSync(join(tmpdir(), 'gavel-second-'))), (e: unknown) => e instanceof SigningKeyMismatch && /"checkpoint-log"/.test(e.message));
  });

  test('with the log key alone it verifies every permit, and refuses to issue one with a key of its own', async () => {
    await activatePolicy(first, ALLOW_PAYMENTS);
    const agent = newAgent();
    const { jws } = await issue(first, agent.did, { actions: ['read'], resources: ['resource://docs/*'] });
    const dir = mkdtempSync(join(tmpdir(), 'gavel-second-'));
    const { mkdirSync } = await import('node:fs');
    mkdirSync(join(dir, 'keys'));
    copyFileSync(join(first.ts.dataDir, 'keys', `${LOG_KEY}.pem`), join(dir, 'keys', `${LOG_KEY}.pem`));
    const svc = await second(dir);
    try {
      const key = `Bearer ${(await first.member([])).key}`;
      const res = await svc.app.inject({ method: 'POST', url: '/v1/authorize', headers: { authorization: key }, payload: { agent: agent.did, permit: jws, action: 'read', resource: 'resource://docs/a' } });
      assert.equal(res.json().decision, 'ALLOW', res.body);
      await assert.rejects(svc.deps.signer.sign(permitKeyName(first.projectId), new Uint8Array([1])), SigningKeyMismatch);
      // Revoking by a chain sent with the request only verifies it, against the record: no 503 there
      // (the revoke route declares none).
      const verified = await chainHoldingLink(svc.deps.signer, first.projectId, jws, permitCommitment(jws));
      assert.equal(verified.links[0]!.commitment, permitCommitment(jws));
    } finally {
      await svc.close();
    }
  });
});
