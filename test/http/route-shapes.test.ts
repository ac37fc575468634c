// Where the route layout could make a request ambiguous (decision 0700): the router keeps a tree per
// method, so a path a static route holds for one method (POST …/agents/freeze) reached a parametric
// route of another (GET …/agents/{agentDid}) as its parameter, and a parameter matched an empty
// segment (…/approvals/ as {approvalId} ''). Both answered 400 for a bad parameter; they are 405
// with the static route's Allow, and 404 as every other trailing slash. Every pair is read off
// /openapi.json, so a route added beside another is held to it too.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { startService, type TestService } from '../support/service.ts';
import { consoleMember } from '../support/console.ts';
import { assertRawProblem, exchange, listenOnLoopback, responses } from '../support/raw-http.ts';

type Method = 'GET' | 'POST' | 'PUT' | 'DELETE' | 'HEAD';
interface Path { template: string; segments: string[]; methods: Method[] }

const isParam = (segment: string) => segment.startsWith('{');
/** The methods a 405 names for a path whose routes have `methods`: every GET answers HEAD too. */
const allowFor = (methods: Method[]) => [...methods, ...(methods.includes('GET') ? ['HEAD'] : [])].sort();

/**
 * Pairs where a request to `own`'s path with a method only `rival` has reached `rival`: the same
 * number of segments, equal where both are static, and `own` static where `rival` first differs.
 */
function shadowedPairs(paths: Path[]): { own: Path; rival: Path; segments: string[] }[] {
  const pairs: { own: Path; rival: Path; segments: string[] }[] = [];
  for (const own of paths) {
    for (const rival of paths) {
      if (own === rival || own.segments.length !== rival.segments.length) continue;
      const overlap = own.segments.every((s, i) => isParam(s) || isParam(rival.segments[i]!) || s === rival.segments[i]);
      const first = own.segments.findIndex((s, i) => isParam(s) !== isParam(rival.segments[i]!));
      if (overlap && first >= 0 && !isParam(own.segments[first]!)) {
        pairs.push({ own, rival, segments: own.segments.map((s, i) => (isParam(s) ? rival.segments[i]! : s)) });
      }
    }
  }
  return pairs;
}

for (const backend of backends()) {
  describe(`route shapes on ${backend.name}`, () => {
    let svc: TestService;
    let port: number;
    let paths: Path[];
    let credentials: (template: string, method: Method) => Record<string, string>;
    before(async () => {
      svc = await startService(backend);
      port = await listenOnLoopback(svc);
      const doc = (await svc.app.inject({ method: 'GET', url: '/openapi.json' })).json();
      paths = Object.entries(doc.paths as Record<string, object>).map(([template, operations]) => ({
        template, segments: template.split('/'), methods: Object.keys(operations).map((m) => m.toUpperCase() as Method),
      }));
      const admin = await consoleMember(svc, ['ADMIN']);
      const key = await svc.keyHeader(['ADMIN', 'AUDITOR', 'APPROVER', 'POLICY_AUTHOR', 'PERMIT_ISSUER']);
      credentials = (template, method) => (template.startsWith('/v1/console/') ? (method === 'GET' ? admin.get : admin.post) : key);
    });
    after(async () => { await svc.stop(); });

    /** A path's URL: the project's id for {projectId}, `x` for every other parameter, and `emptied` empty. */
    const urlOf = (segments: string[], emptied?: string) =>
      segments.map((s) => (s === emptied ? '' : s === '{projectId}' ? svc.projectId : isParam(s) ? 'x' : s)).join('/');
    const send = (method: Method, url: string, headers: Record<string, string>) =>
      svc.app.inject({ method, url, headers, ...(method === 'GET' || method === 'HEAD' ? {} : { payload: {} }) });

    test('a static path asked with a method only its parametric sibling has is 405 naming the static route\'s methods, signed in or not', async () => {
      const pairs = shadowedPairs(paths);
      assert.ok(pairs.some((p) => p.own.template === '/v1/console/projects/{projectId}/agents/freeze' && p.rival.template.endsWith('/agents/{agentDid}')), 'the agents/freeze pair is among them');
      for (const { own, rival, segments } of pairs) {
        const url = urlOf(segments);
        for (const method of [...rival.methods.filter((m) => !own.methods.includes(m)), 'DELETE' as const]) {
          if (own.methods.includes(method)) continue;
          for (const headers of [{}, credentials(own.template, method)]) {
            const res = await send(method, url, headers);
            assert.equal(res.statusCode, 405, `${method} ${own.template} (beside ${rival.template}): ${res.body}`);
            assert.equal(res.json().code, 'method_not_allowed');
            assert.deepEqual(String(res.headers.allow).split(', ').sort(), allowFor(own.methods), `${method} ${own.template}`);
          }
        }
      }
    });

    test('the same static path spelt with escapes of unreserved characters is the same path', async () => {
      const res = await send('GET', `/v1/console/projects/${svc.projectId}/agents/fr%65eze`, credentials('/v1/console/', 'GET'));
      assert.equal(res.statusCode, 405, res.body);
      assert.equal(res.headers.allow, 'POST');
    });

    test('an empty path parameter (a trailing slash on a collection, or `//`) is 404 not_found, signed in or not', async () => {
      let checked = 0;
      for (const path of paths) {
        for (const emptied of path.segments.filter(isParam)) {
          const url = urlOf(path.segments, emptied);
          for (const method of path.methods) {
            for (const headers of [{}, credentials(path.template, method)]) {
              const res = await send(method, url, headers);
              assert.equal(res.statusCode, 404, `${method} ${path.template} with ${emptied} empty: ${res.body}`);
              assert.equal(res.json().code, 'not_found');
              checked += 1;
            }
          }
        }
      }
      assert.ok(checked > 50, `${checked} requests`);
    });

    test('a body sent to such a path is left unread without misframing the connection, as on a path of no route', async () => {
      const body = '{"reason": "x"}';
      const raw = await exchange(port, `POST /v1/console/projects/${svc.projectId}/members//revoke HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`
        + 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
      const [first, second] = responses(raw);
      assertRawProblem(first!, 404, 'not_found');
      if (second) assert.equal(second.status, 200, second.body);
    });

    test('a parametric route still answers its own values, and a request to no route is still 404', async () => {
      const admin = credentials('/v1/console/', 'GET');
      const agent = await send('GET', `/v1/console/projects/${svc.projectId}/agents/${encodeURIComponent('did:example:nobody')}`, admin);
      assert.equal(agent.statusCode, 404, agent.body);
      assert.match(agent.json().detail, /agent/);
      const permit = await send('GET', `/v1/console/projects/${svc.projectId}/permits/freeze`, admin);
      assert.equal(permit.statusCode, 400, 'a value that is no static path is the parameter\'s to judge');
      const none = await send('GET', `/v1/console/projects/${svc.projectId}/agents/freeze/x`, admin);
      assert.equal(none.statusCode, 404, none.body);
      assert.equal(none.json().code, 'not_found');
    });
  });
}
