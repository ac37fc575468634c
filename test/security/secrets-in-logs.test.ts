// No credential reaches the log, at the most verbose level: a real `gavel serve` at trace signs in,
// mints, uses and revokes an API key, fails a login, and is sent a request Node's HTTP parser
// refuses while it carries the key and the cookies (the parser's error holds the raw request bytes).
// Each secret is looked for as text, as base64 and as the byte list a serialized Buffer would show.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnGavel } from '../support/process.ts';
import { exchange } from '../support/raw-http.ts';
import { leaksIn, secretForms } from '../support/secrets.ts';


test('no API key, password, session, CSRF or device token appears in any log line at trace', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'gavel-secrets-'));
  const gavel = await spawnGavel({ GAVEL_DATA_DIR: dataDir, GAVEL_LOG_LEVEL: 'trace' });
  try {
    const announced = gavel.lines.findIndex((l) => l.startsWith('First start: log in as'));
    const adminPassword = gavel.lines[announced + 1]!.trim();
    const json = { 'content-type': 'application/json' };
    const signIn = await fetch(`${gavel.url}/v1/console/login`, { method: 'POST', headers: json, body: JSON.stringify({ name: 'admin', password: adminPassword }) });
    assert.equal(signIn.status, 200);
    const cookies = Object.fromEntries(signIn.headers.getSetCookie().map((c) => c.split(';')[0]!.split('=') as [string, string]));
    const csrf = ((await signIn.json()) as { csrf_token: string }).csrf_token;
    const cookie = `gavel_session=${cookies.gavel_session}; gavel_csrf=${csrf}`;
    const projectId = ((await (await fetch(`${gavel.url}/v1/console/projects`, { headers: { cookie } })).json()) as { projects: { id: string }[] }).projects[0]!.id;
    const minted = await (await fetch(`${gavel.url}/v1/console/projects/${projectId}/api-keys`, {
      method: 'POST', headers: { ...json, cookie, 'x-csrf-token': csrf }, body: JSON.stringify({ name: 'k', roles: ['ADMIN'] }),
    })).json() as { id: string; secret: string };
    const bearer = { authorization: `Bearer ${minted.secret}` };
    assert.equal((await fetch(`${gavel.url}/v1/projects/${projectId}/sod`, { headers: bearer })).status, 200);
    const wrongPassword = 'not-the-password-but-a-secret-all-the-same';
    assert.equal((await fetch(`${gavel.url}/v1/console/login`, { method: 'POST', headers: json, body: JSON.stringify({ name: 'admin', password: wrongPassword }) })).status, 401);
    // A well-formed key and session, one bad header after them: refused by Node's parser.
    const { port } = new URL(gavel.url);
    const raw = await exchange(Number(port), `GET /v1/projects/${projectId}/sod HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${minted.secret}\r\n`
      + `Cookie: ${cookie}; gavel_device=${cookies.gavel_device}\r\nX-Csrf-Token: ${csrf}\r\nBad Header: x\r\n\r\n`);
    assert.match(raw, /^HTTP\/1\.1 400 /);
    assert.equal((await fetch(`${gavel.url}/v1/console/projects/${projectId}/api-keys/${minted.id}/revoke`, { method: 'POST', headers: { ...json, cookie, 'x-csrf-token': csrf }, body: '{}' })).status, 200);
    assert.equal((await fetch(`${gavel.url}/v1/projects/${projectId}/sod`, { headers: bearer })).status, 401);
    await gavel.kill();

    assert.ok(gavel.lines.some((l) => l.includes('refusing a request that is not well-formed HTTP')), 'the refusal was logged');
    const secrets = { 'API key': minted.secret, 'session token': cookies.gavel_session!, 'CSRF token': csrf, 'device cookie': cookies.gavel_device!, 'wrong password': wrongPassword };
    const leaks = leaksIn(secrets, gavel.lines);
    // The first start's password is printed once, by design, and logged nowhere.
    for (const form of secretForms(adminPassword)) for (const [i, line] of gavel.lines.entries()) if (i !== announced + 1 && line.includes(form)) leaks.push(`admin password: ${line.slice(0, 300)}`);
    assert.deepEqual(leaks, []);
  } finally {
    await gavel.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  }
});
