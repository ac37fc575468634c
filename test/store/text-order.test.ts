// Lists that break a tie on a text column order it by its bytes on both engines: SQLite compares
// text bytewise, PostgreSQL by the database's collation, which many installations set to en_US
// (case-insensitive first: "to" before "tU"). Agents that one decision adds (the new links of a
// delegated chain) share a creation time, so the console's agent list orders them by DID.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createPrivateKey, createPublicKey, sign } from 'node:crypto';
import { sql } from 'kysely';
import { backends } from '../support/backends.ts';
import { startService } from '../support/service.ts';
import { consoleMember } from '../support/console.ts';
import { activatePolicy, ALLOW_PAYMENTS, delegate, issue, type Agent } from '../support/authorize.ts';
import { didKeyFromPublicKey } from '../../src/domain/permit/index.ts';

function seededAgent(seed: number): Agent {
  const privateKey = createPrivateKey({ key: Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), Buffer.alloc(32, seed)]), format: 'der', type: 'pkcs8' });
  const x = createPublicKey(privateKey).export({ format: 'jwk' }).x!;
  return { did: didKeyFromPublicKey(new Uint8Array(Buffer.from(x, 'base64url'))), privateKey, sign: async (m) => new Uint8Array(sign(null, m, privateKey)) };
}

for (const backend of backends()) {
  test(`agents created together list in byte order of their DIDs on ${backend.name}, whatever the collation`, async () => {
    const svc = await startService(backend);
    try {
      // A database created under en_US gives every text column that collation.
      if (backend.name === 'postgres') await sql`alter table agents alter column did type text collate "en-x-icu"`.execute(svc.ts.store.db);
      const [root, y, z] = [seededAgent(30), seededAgent(17), seededAgent(21)] as [Agent, Agent, Agent];
      // Seeds chosen so that bytes and en_US disagree: "…z6MktU…" < "…z6Mkto…" in bytes only.
      assert.ok(y.did < z.did && y.did.toLowerCase() > z.did.toLowerCase());
      await activatePolicy(svc, ALLOW_PAYMENTS);
      const { jws } = await issue(svc, root.did, { actions: ['read'], resources: ['resource://docs/*'] });
      const chain = await delegate(await delegate(jws, root, y.did, { actions: ['read'], resources: ['resource://docs/*'] }), y, z.did, { actions: ['read'], resources: ['resource://docs/*'] });
      const res = await svc.app.inject({ method: 'POST', url: '/v1/authorize', headers: await svc.keyHeader([]), payload: { agent: z.did, permit: chain, action: 'read', resource: 'resource://docs/a' } });
      assert.equal(res.json().decision, 'ALLOW', res.body);
      const admin = await consoleMember(svc, ['ADMIN']);
      const url = `/v1/console/projects/${svc.projectId}/agents`;
      const all = (await svc.app.inject({ method: 'GET', url: `${url}?limit=500`, headers: admin.get })).json().agents.map((a: { did: string }) => a.did);
      assert.deepEqual(all, [z.did, y.did, root.did], 'newest first, a tie in descending bytes');
      const paged: string[] = [];
      let cursor: string | null = null;
      do {
        const page: { agents: { did: string }[]; next_cursor: string | null } = (await svc.app.inject({ method: 'GET', url: `${url}?limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, headers: admin.get })).json();
        paged.push(...page.agents.map((a) => a.did));
        cursor = page.next_cursor;
      } while (cursor);
      assert.deepEqual(paged, all, 'pages of one give the same order');
    } finally {
      await svc.stop();
    }
  });
}
