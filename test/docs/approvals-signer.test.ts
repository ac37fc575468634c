// A signer written from docs/approvals.md alone gets a valid approval the first time: it builds the
// statement from the obligation view with the members in the order the page shows them (which must
// be the order that is signed, RFC 8785's), signs it with node:crypto, and records it with the
// `key_id` the page says to send. The statement states a merchant call, so nested members count.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync, sign } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { approvedCallsFixture } from '../support/approvals.ts';
import { backends } from '../support/backends.ts';
import { consoleMember } from '../support/console.ts';
import { startService } from '../support/service.ts';

const page = readFileSync('docs/approvals.md', 'utf8');
/** The member names of the statement the page shows, in the order it writes them. */
const shownOrder = (): string[] => {
  const block = /canonical statement[\s\S]*?```json\n([\s\S]*?)```/.exec(page)?.[1];
  assert.ok(block, 'docs/approvals.md shows the statement');
  return [...block.matchAll(/"([a-z_]+)":/g)].map((m) => m[1]!);
};

/** `value` written with the members of each object in the page's order; members it does not name (a payload's) as JCS sorts them. */
function inShownOrder(value: unknown, order: string[]): unknown {
  if (Array.isArray(value)) return value.map((v) => inShownOrder(v, order));
  if (value === null || typeof value !== 'object') return value;
  const rank = (k: string) => (order.includes(k) ? order.indexOf(k) : order.length);
  const keys = Object.keys(value).sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0));
  return Object.fromEntries(keys.map((k) => [k, inShownOrder((value as Record<string, unknown>)[k], order)]));
}

test('docs/approvals.md and the OpenAPI document say which id key_id is', async () => {
  assert.ok(/`key_id` is the `id` \(`apk_…`\) the key's registration answered/.test(page), 'the page says key_id is the registration\'s id');
  const svc = await startService(backends()[0]!);
  try {
    const doc = (await svc.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    const body = doc.paths['/v1/projects/{projectId}/approvals'].post.requestBody.content['application/json'].schema;
    const schema = body.$ref ? doc.components.schemas[body.$ref.split('/').at(-1)] : body;
    assert.match(schema.properties.key_id.description, /registration answered: not its public key/);
  } finally { await svc.stop(); }
});

for (const backend of backends()) {
  test(`a signer following docs/approvals.md alone builds the signed bytes and records an approval (${backend.name})`, async () => {
    const f = await approvedCallsFixture(backend);
    try {
      const P = f.svc.projectId;
      const opened = await f.authorize({ ...f.req, execution: { merchant: 'shop', operation: 'ok', payload: { order: 'o-17', amount: 50_000 }, nonce: 'doc-signer-1' } });
      assert.equal(opened.decision, 'REQUIRE_APPROVAL', JSON.stringify(opened));
      const view = await f.obligation(opened.approval_request_id);

      const { id, agent, action, resource, amount, intent, execution, policy_version, matched_rules, expires_at } = view;
      const facts = { type: 'gavel-approval/v1', approval_request_id: id, project_id: P, agent, action, resource, amount, intent, execution, policy_version, matched_rules, expires_at };
      const built = JSON.stringify(inShownOrder(facts, shownOrder()));
      assert.equal(built, view.statement, 'the statement as the page orders it is the one signed');

      const person = await consoleMember(f.svc, ['APPROVER']);
      const { publicKey, privateKey } = generateKeyPairSync('ed25519');
      const registered = await f.svc.app.inject({ method: 'POST', url: `/v1/console/projects/${P}/principals/${person.principalId}/approval-keys`, headers: person.post, payload: { public_key: publicKey.export({ format: 'jwk' }).x } });
      assert.equal(registered.statusCode, 201, registered.body);
      const signature = sign(null, Buffer.from(built, 'utf8'), privateKey).toString('base64url');
      const record = (key_id: string) => f.svc.app.inject({ method: 'POST', url: `/v1/projects/${P}/approvals`, headers: f.key, payload: { approval_request_id: id, key_id, signature } });
      const wrongId = await record(registered.json().public_key);
      assert.deepEqual([wrongId.statusCode, wrongId.json().errors?.[0]?.pointer], [400, '/key_id'], 'the public key is not the key_id');
      const recorded = await record(registered.json().id);
      assert.equal(recorded.statusCode, 201, recorded.body);
    } finally { await f.stop(); }
  });
}
