// A window on audit events' created_at is read as a range of their ids (services/audit/window.ts),
// which holds only because an event's id is minted from its created_at (audit/record.ts): whatever
// clock stamped it (here a fake one, years behind the real one), and when that clock steps back
// (monotonic ids then run ahead of their stamps). The overview's count and replay's window must
// still find exactly the events stamped inside, at the window's edges too. The clock is first years
// behind the real one (every id is minted past the thread's monotonic ids), then years ahead (the
// thread's ids follow it, and run ahead of it when it steps back).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import type { Store } from '../../src/store/store.ts';
import { CanonicalJson, recordAudit } from '../../src/services/audit/record.ts';
import { canonicalDecisionData } from '../../src/domain/decision/event.ts';
import { countAuditEventsSince } from '../../src/services/audit/window.ts';
import { replayPolicy } from '../../src/services/policy/replay.ts';
import { newId, STAMPED_ID_LEAD_MS } from '../../src/lib/ids.ts';

// Offsets from T0, in the order the events are written: edges a millisecond apart, a step back
// within the lead (monotonic ids run ahead of the stamp), one beyond it, and a step forward again.
const WRITTEN = [-1, 0, 1, 2, 1_000, 500, STAMPED_ID_LEAD_MS - 1, 0, 10_000, 1, 9_999, -1, 20_000, STAMPED_ID_LEAD_MS, 10_001];
const PROBES = [...new Set(WRITTEN.flatMap((o) => [o - 1, o, o + 1, o + STAMPED_ID_LEAD_MS, o - STAMPED_ID_LEAD_MS]))].sort((a, b) => a - b);

const deny = { spec_version: '1', rules: [{ id: 'no', effect: 'DENY' }] };
const stamped = (from: number, until = Infinity) => WRITTEN.filter((o) => o >= from && o < until).length;

/** Writes WRITTEN's events for `project`, stamped from `t0`, as the service does, and reads every probe's window. */
async function writeAndRead(store: Store, project: string, t0: number): Promise<void> {
  const iso = (offset: number) => new Date(t0 + offset).toISOString();
  for (const offset of WRITTEN) {
    const data = canonicalDecisionData({
      decision_id: newId('dec'), request_id: newId('req'), agent: 'did:key:z6Mkagent', action: 'pay', resource: 'r', amount: null, intent: null,
      decision: 'ALLOW', reason_code: 'policy_allow', detail: null, policy_version: 1, matched_rules: [], permit_commitment: null,
      delegation_depth: 0, request_time: iso(offset), approval_request_id: null,
    });
    await store.transaction((trx) => recordAudit(trx, { projectId: project, kind: 'decision', actor: 'system', data: new CanonicalJson(data), at: new Date(t0 + offset) }));
  }
  for (const since of PROBES) assert.equal(await countAuditEventsSince(store.db, project, new Date(t0 + since)), stamped(since), `since ${iso(since)}`);
  for (const from of PROBES) {
    for (const until of PROBES.filter((u) => u > from)) {
      const r = await replayPolicy(store.db, project, { policy: deny, from: iso(from), until: iso(until) });
      assert.equal(r.considered, stamped(from, until), `[${iso(from)}, ${iso(until)})`);
    }
    assert.equal((await replayPolicy(store.db, project, { policy: deny, until: iso(from) })).considered, stamped(-Infinity, from), `until ${iso(from)}`);
  }
}

for (const backend of backends()) {
  test(`the events of a window are counted and replayed exactly, at its edges and across clock steps (${backend.name})`, async () => {
    const ts = await backend.open();
    try {
      await writeAndRead(ts.store, 'prj_behind', Date.parse('2024-03-01T00:00:00.000Z'));
      await writeAndRead(ts.store, 'prj_ahead', Date.parse('2031-03-01T00:00:00.000Z'));
    } finally { await ts.cleanup(); }
  });
}
