// Free text a person types (reasons, notes, labels, names, intents) is read later by someone else,
// often an auditor: every such field refuses characters that hide text or show it in another order
// than it was written (bidi overrides and isolates, zero-width and other format characters, controls),
// at the field, and says so. Reasons and notes keep their lines; labels and names are one line.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { startService, type TestService } from '../support/service.ts';
import { consoleMember, type ConsoleMember } from '../support/console.ts';
import { ALLOW_PAYMENTS, newAgent } from '../support/authorize.ts';

// U+202E RLO, U+202A LRE, U+2066 LRI with U+2069 PDI, U+2067 RLI, U+200B ZWSP, U+00AD soft hyphen, ESC, U+2028.
const HIDING = ['pay \u202e71 RUE', 'a\u202ab', 'a\u2066b\u2069', 'a\u2067b', 'a\u200bb', 'a\u00adb', 'a\u001b[2Jb', 'a\u2028b'];
const TWO_LINES = 'checked with the merchant\r\nno charge was made';

const backend = backends()[0]!;
describe(`free text a person types, on ${backend.name}`, () => {
  let svc: TestService;
  let admin: ConsoleMember;
  const P = () => `/v1/projects/${svc.projectId}`;
  const C = () => `/v1/console/projects/${svc.projectId}`;
  before(async () => {
    svc = await startService(backend);
    admin = await consoleMember(svc, ['ADMIN', 'APPROVER', 'POLICY_AUTHOR']);
  });
  after(async () => { await svc.stop(); });

  /** Each field: where it is sent, with which credential, the body around it, and whether it may span lines. */
  async function fields() {
    const key = await svc.keyHeader(['ADMIN', 'PERMIT_ISSUER', 'POLICY_AUTHOR']);
    const agent = newAgent().did;
    const apr = 'apr_01kb0000000000000000000000';
    const exe = 'exe_01kb0000000000000000000000';
    return [
      ['POST', `${P()}/agents/freeze`, key, (reason: string) => ({ agent, reason }), '/reason', true],
      ['POST', `${P()}/agents/release`, key, (reason: string) => ({ agent, reason }), '/reason', true],
      ['POST', `${C()}/agents/freeze`, admin.post, (reason: string) => ({ agent, reason }), '/reason', true],
      ['POST', `${P()}/approvals/revoke`, key, (reason: string) => ({ approval_request_id: apr, reason }), '/reason', true],
      ['POST', `${P()}/executions/resolve`, key, (note: string) => ({ execution_id: exe, outcome: 'FAILED', note }), '/note', true],
      ['POST', `${C()}/executions/${exe}/resolve`, admin.post, (note: string) => ({ outcome: 'FAILED', note }), '/note', true],
      ['PUT', `${P()}/policy`, key, (note: string) => ({ policy: ALLOW_PAYMENTS, note }), '/note', true],
      ['PUT', `${C()}/policy`, admin.post, (note: string) => ({ policy: ALLOW_PAYMENTS, note }), '/note', true],
      ['POST', `${C()}/agents`, admin.post, (name: string) => ({ did: agent, name }), '/name', false],
      ['POST', `${C()}/principals/${admin.principalId}/approval-keys`, admin.post, (name: string) => ({ public_key: 'A'.repeat(43), name }), '/name', false],
      ['POST', `${C()}/api-keys`, admin.post, (name: string) => ({ name, roles: [] }), '/name', false],
      ['POST', '/v1/authorize', key, (intent: string) => ({ agent, permit: 'x', action: 'pay', resource: 'resource://shop/1', intent }), '/intent', false],
    ] as const;
  }

  test('bidi overrides and isolates, other format characters and controls are refused at the field, saying what is not allowed', async () => {
    for (const [method, url, headers, body, pointer, lines] of await fields()) {
      for (const text of [...HIDING, ...(lines ? [] : ['one\ntwo', 'one\ttwo'])]) {
        const res = await svc.app.inject({ method, url, headers, payload: body(text) });
        assert.equal(res.statusCode, 400, `${url} ${JSON.stringify(text)}: ${res.body}`);
        assert.deepEqual(res.json().errors.map((e: { pointer: string; code: string }) => [e.pointer, e.code]), [[pointer, 'bad_format']], `${url} ${JSON.stringify(text)}`);
        assert.match(res.json().errors[0].message, /no .*control character.*format character \(such as the bidi overrides and isolates U\+202A–U\+202E, U\+2066–U\+2069/, url);
      }
    }
  });

  test('blank or invisible text is refused in every such field, one line or many', async () => {
    for (const [method, url, headers, body, pointer] of await fields()) {
      for (const text of ['   ', '\u3164', '\u2800\u00a0']) {
        const res = await svc.app.inject({ method, url, headers, payload: body(text) });
        assert.equal(res.statusCode, 400, `${url} ${JSON.stringify(text)}: ${res.body}`);
        assert.deepEqual(res.json().errors.map((e: { pointer: string }) => e.pointer), [pointer], url);
        assert.match(res.json().errors[0].message, /at least one visible character/, url);
      }
    }
  });

  test('a reason or a note keeps its lines and tabs, and any script', async () => {
    const key = await svc.keyHeader(['ADMIN', 'POLICY_AUTHOR']);
    const agent = newAgent().did;
    const frozen = await svc.app.inject({ method: 'POST', url: `${P()}/agents/freeze`, headers: key, payload: { agent, reason: `${TWO_LINES}\n\tمرحبا — é` } });
    assert.equal(frozen.statusCode, 200, frozen.body);
    assert.equal(frozen.json().reason, `${TWO_LINES}\n\tمرحبا — é`);
    const saved = await svc.app.inject({ method: 'PUT', url: `${P()}/policy`, headers: key, payload: { policy: ALLOW_PAYMENTS, note: TWO_LINES } });
    assert.equal(saved.statusCode, 201, saved.body);
    assert.equal(saved.json().note, TWO_LINES);
  });

  // U+200C in a Persian word (می‌خواهم), U+200D in an emoji sequence (a family) and a Devanagari conjunct.
  const JOINED = ['می\u200cخواهم', '\u{1F468}\u200d\u{1F469}\u200d\u{1F467}', 'क्\u200dष'];

  test('the zero-width joiner and non-joiner, which scripts and emoji need, are kept in every such field', async () => {
    for (const [method, url, headers, body, pointer] of await fields()) {
      for (const text of JOINED) {
        const res = await svc.app.inject({ method, url, headers, payload: body(text) });
        // The field is accepted: whatever the route answers next, it is not this field's refusal.
        const refused = res.statusCode === 400 ? res.json().errors?.some((e: { pointer: string }) => e.pointer === pointer) : false;
        assert.equal(refused, false, `${url} ${JSON.stringify(text)}: ${res.body}`);
      }
    }
    const key = await svc.keyHeader(['ADMIN']);
    const frozen = await svc.app.inject({ method: 'POST', url: `${P()}/agents/freeze`, headers: key, payload: { agent: newAgent().did, reason: JOINED.join('\n') } });
    assert.equal(frozen.statusCode, 200, frozen.body);
    assert.equal(frozen.json().reason, JOINED.join('\n'));
  });
});
