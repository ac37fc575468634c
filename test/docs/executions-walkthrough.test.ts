// docs/executions.md walked for real: its merchants file configures the service, its authorize
// call (with a real agent and permit in place of the page's `did:key:z6Mk…` and `eyJ…`) gets the
// answer the page shows, and a merchant that checks `gavel-signature` with the page's formula alone,
// behind a `base_url` with a path as the page's has, accepts the call.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseMerchants } from '../../src/merchants/config.ts';
import { activatePolicy, issue, newAgent } from '../support/authorize.ts';
import { backends } from '../support/backends.ts';
import { startService } from '../support/service.ts';
import { codeBlocks, curlCalls } from '../support/walkthroughs.ts';

const page = 'docs/executions.md';
const text = readFileSync(page, 'utf8');
const json = [...text.matchAll(/^```json\n([\s\S]*?)^```/gm)].map((m) => m[1]!);
const merchantsDoc = JSON.parse(json[0]!) as { merchants: Record<string, { base_url: string; secret: string; operations: Record<string, { path: string }> }> };
// The policy document docs/policy-language.md opens with: it allows payments.create up to 50.00 EUR.
const policy = JSON.parse(/```json\n([\s\S]*?)```/.exec(readFileSync('docs/policy-language.md', 'utf8'))![1]!);

/** What the page says the merchant signs, with the request's own values put in. */
function signedAsThePageSays(t: string, req: IncomingMessage, body: string): string {
  const formula = /HMAC-SHA256\(secret, "([^"]+)"\)/.exec(text)?.[1];
  assert.ok(formula, 'the page gives the signed text');
  const values: Record<string, string> = { '<t>': t, '<METHOD>': req.method!, '<path and query>': req.url!, '<idempotency-key>': String(req.headers['idempotency-key']), '<gavel-execution-id>': String(req.headers['gavel-execution-id']), '<body>': body };
  const filled = formula.replace(/<[^>]+>/g, (p) => { assert.ok(p in values, `placeholder ${p}`); return values[p]!; });
  return filled.replaceAll('\\n', '\n');
}

test(`${page}: the operations that name their amount are a valid merchants configuration`, () => {
  const operations = JSON.parse(`{${json[1]!}}`).operations;
  const acme = merchantsDoc.merchants.acme!;
  assert.doesNotThrow(() => parseMerchants({ merchants: { acme: { ...acme, operations } } }));
});

for (const backend of backends()) {
  test(`${page}: the authorize call with an execution reaches a merchant that checks the signature as the page says (${backend.name})`, async () => {
    const [name, merchant] = Object.entries(merchantsDoc.merchants)[0]!;
    const seen: { url: string; valid: boolean }[] = [];
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => { body += c.toString('utf8'); });
      req.on('end', () => {
        const [, t, v1] = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(req.headers['gavel-signature'])) ?? [];
        const valid = v1 === createHmac('sha256', merchant.secret).update(signedAsThePageSays(t!, req, body)).digest('hex');
        seen.push({ url: req.url!, valid });
        res.writeHead(valid ? 201 : 401).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const dir = mkdtempSync(join(tmpdir(), 'gavel-doc-merchants-'));
    const base = new URL(merchant.base_url);
    const local = { ...merchant, base_url: `http://127.0.0.1:${(server.address() as AddressInfo).port}${base.pathname}` };
    writeFileSync(join(dir, 'merchants.json'), JSON.stringify({ merchants: { [name]: local } }));
    const svc = await startService(backend, { merchantsFile: join(dir, 'merchants.json') });
    try {
      await activatePolicy(svc, policy);
      const agent = newAgent();
      const { jws } = await issue(svc, agent.did, { actions: ['payments.create'], resources: ['resource://payments/*'] });
      const block = codeBlocks(page)[0]!;
      const [call] = curlCalls(block);
      assert.equal(call?.route, 'POST /v1/authorize');
      const body = call!.body!.replace('did:key:z6Mk…', agent.did).replace('eyJ…', jws);
      const answer = await svc.app.inject({ method: 'POST', url: '/v1/authorize', headers: { ...await svc.keyHeader([]), 'content-type': 'application/json' }, payload: body });
      const shown = /# → \{"decision":"(\w+)","reason_code":"(\w+)",….*"status":"(\w+)"\}\}/.exec(block);
      assert.ok(shown, 'the page shows the answer');
      const got = answer.json();
      assert.deepEqual([got.decision, got.reason_code, got.execution?.status], shown.slice(1), answer.body);
      const operation = Object.values(merchant.operations)[0]!;
      assert.deepEqual(seen, [{ url: `${base.pathname}${operation.path}`, valid: true }]);
    } finally {
      await svc.stop();
      server.close();
    }
  });
}
