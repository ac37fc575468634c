// What an unauthenticated request's URL or Cookie header costs before any credential is checked
// must grow with its length, not its square: the 404's hint cut trailing slashes with /\/+$/ and the
// cookie reader trimmed with /^[ \t]+|[ \t]+$/, each retrying from every character of a run that does
// not end the text (a 16 KB request took about 100 ms; thirty held every decision for seconds:
// hostile-input audit, session 53). Compared within the run, never against a time: the hostile
// text beside a benign one of the same length, the quadratic one thousands of times slower.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { nearRouteHint } from '../../src/http/near-route.ts';
import { cookieValues } from '../../src/http/auth/cookie-values.ts';

const N = 20_000;

/** The fastest of several runs of `f`, in ms (the first warms it up). */
function fastest(f: () => unknown): number {
  f();
  let best = Infinity;
  for (let i = 0; i < 5; i++) {
    const t = performance.now();
    f();
    best = Math.min(best, performance.now() - t);
  }
  return best;
}

/** Hostile against benign, with a floor for timer granularity: linear gives about 1, quadratic thousands. */
function assertLinear(hostile: () => unknown, benign: () => unknown, what: string): void {
  const h = fastest(hostile);
  const b = Math.max(fastest(benign), 0.05);
  assert.ok(h / b < 50, `${what}: ${h.toFixed(2)} ms against ${b.toFixed(2)} ms for a benign text of the same length`);
}

const none = { of: () => undefined };

test('the 404 hint reads a path of slashes not at its end in time linear in its length', () => {
  assertLinear(() => nearRouteHint(none, 'GET', `/${'/'.repeat(N)}x`), () => nearRouteHint(none, 'GET', `/${'a'.repeat(N)}x`), 'slashes');
  const known = { of: (p: string) => (p === '/v1/authorize' ? { methods: new Set(['POST']) } as never : undefined) };
  assert.equal(nearRouteHint(known, 'POST', '/v1/authorize///'), '; did you mean POST /v1/authorize?');
  assert.equal(nearRouteHint(known, 'POST', '/authorize/'), '; did you mean POST /v1/authorize?');
});

test('the cookie reader trims names and values holding runs of blanks in time linear in their length', () => {
  const blanks = `gavel_session=a; x${' '.repeat(N)}y=1; gavel_csrf=b${'\t'.repeat(N)}c`;
  const letters = `gavel_session=a; x${'z'.repeat(N)}y=1; gavel_csrf=b${'z'.repeat(N)}c`;
  assertLinear(() => cookieValues(blanks, 'gavel_csrf'), () => cookieValues(letters, 'gavel_csrf'), 'blanks');
  assert.deepEqual(cookieValues(' \tgavel_session = \t v \t; other=1', 'gavel_session'), ['v']);
  assert.deepEqual(cookieValues('gavel_session=\t \t', 'gavel_session'), ['']);
  assert.deepEqual(cookieValues(`gavel_csrf=b${'\t'.repeat(3)}c`, 'gavel_csrf'), [`b${'\t'.repeat(3)}c`]);
});
