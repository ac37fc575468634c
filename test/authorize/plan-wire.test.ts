// A decision's plan crosses to the SQLite writer thread as JSON text (writer/wire.ts), so every
// member of a real plan, and of a decision prepared for its one statement, must survive JSON
// unchanged: no Date, no bytes, no undefined-vs-missing. A prepared decision usually crosses as
// text of its own (one-statement.ts, preparedDecisionText), and as JSON when it cannot.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { startService } from '../support/service.ts';
import { activatePolicy, ALLOW_PAYMENTS, issue, newAgent } from '../support/authorize.ts';
import { Authorizer } from '../../src/services/authorize/authorize.ts';
import type { DecisionPlan } from '../../src/services/authorize/commit.ts';
import { preparedDecisionText, type PreparedDecision } from '../../src/services/authorize/one-statement.ts';
import { jsonProcedures, textProcedures, type GavelWriter } from '../../src/services/writer/procedures.ts';
import { decodeCalls, encodeCalls } from '../../src/services/writer/wire.ts';
import { CHECKED_AT_COMMIT } from '../../src/store/read-epoch.ts';

test('a decision plan, with an execution reservation, is plain JSON', async () => {
  const svc = await startService(backends().find((b) => b.name === 'sqlite')!);
  try {
    await activatePolicy(svc, ALLOW_PAYMENTS);
    const agent = newAgent();
    const { jws } = await issue(svc, agent.did, { actions: ['pay'], resources: ['resource://shop/*'], budget: { minor: 10_000, currency: 'EUR' } });
    const plans: DecisionPlan[] = [];
    const prepared: PreparedDecision[] = [];
    const writer = {
      call: async (name: string, args: DecisionPlan & PreparedDecision) => { (name === 'authorize.commitPrepared' ? prepared : plans).push(args); return true; },
    } as unknown as GavelWriter;
    const authorizer = new Authorizer({ store: svc.ts.store, signer: svc.deps.signer, writer });
    const ctx = { projectId: svc.projectId, actor: 'key_x', requestId: 'req_x', now: new Date() };
    const input = { agent: agent.did, permit: jws, action: 'pay', resource: 'resource://shop/1', amount: { minor: 100, currency: 'EUR' }, intent: 'buy' };
    await authorizer.decide(ctx, input, { executionId: 'exe_x', instanceId: 'i', nonce: 'n', fingerprint: 'f', call: '{"merchant":"m","operation":"o","payload":{}}', merchant: 'm', operation: 'o', agent: agent.did, action: 'pay', resource: 'resource://shop/1' });
    await authorizer.decide(ctx, { ...input, permit: `${jws}x` }); // a failed permit check travels too
    // Planned under a cached key context: its one statement is prepared here and crosses instead.
    await authorizer.decide({ ...ctx, epoch: 1 }, { ...input, permit: `${jws}x` });
    assert.equal(plans.length, 2);
    assert.equal(prepared.length, 1);
    for (const plan of plans) assert.deepEqual(JSON.parse(JSON.stringify(plan)), plan);
    assert.deepEqual(JSON.parse(JSON.stringify(prepared[0])), prepared[0], 'a prepared decision is plain JSON too');
    assert.ok(plans[0]!.permit!.counters.length > 0, 'the budget counter is part of the plan');
    assert.ok(plans[1]!.failure, 'the failure is part of the plan');
  } finally { await svc.stop(); }
});

/** A prepared decision as the Authorizer builds one, with the fields given. */
function preparedWith(over: Partial<PreparedDecision> & { data?: string } = {}): PreparedDecision {
  const { data, ...rest } = over;
  return {
    epoch: 7, projectId: 'prj_01kb0000000000000000000000', agent: 'did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK',
    actor: 'key_01kb0000000000000000000000', policyVersion: 3, chain: ['a'.repeat(64), 'b'.repeat(64)],
    row: { id: 'aud_01kb0000000000000000000000', project_id: 'prj_01kb0000000000000000000000', kind: 'decision', actor: 'key_01kb0000000000000000000000', created_at: '2026-11-24T07:00:00.000Z',
      data: data ?? JSON.stringify({ resource: 'resource://a/"quoted"\\back', note: 'é 漢字 🙂', ctl: '\u0001\u001d\u001e\u001f\n' }) },
    ...rest,
  };
}

test('a prepared decision crosses as its own text and comes back equal, whatever its event holds', () => {
  const cases = [
    preparedWith(),
    preparedWith({ epoch: CHECKED_AT_COMMIT, policyVersion: null, chain: [] }),
    preparedWith({ chain: ['d'.repeat(64)], data: '{}' }),
  ];
  for (const p of cases) {
    const text = preparedDecisionText.encode(p);
    assert.ok(text !== undefined, 'JSON event text never holds a separator');
    assert.deepEqual(preparedDecisionText.decode(text), p);
  }
});

test('a prepared decision with a separator or comma in a field crosses as JSON instead, and still comes back equal', () => {
  const odd = [
    preparedWith({ agent: 'did:key:a\u001fb' }),
    preparedWith({ chain: ['a,b'] }),
    preparedWith({ chain: [''] }),
    preparedWith({ data: 'raw \u001e text' }),
  ];
  for (const p of odd) assert.equal(preparedDecisionText.encode(p), undefined);
  // Every field is checked on its own: a separator in any one of them sends the call as JSON.
  const tops = ['projectId', 'agent', 'actor'] as const;
  const rows = ['id', 'project_id', 'kind', 'actor', 'created_at'] as const;
  for (const sep of ['\u001d', '\u001e', '\u001f']) {
    for (const k of tops) assert.equal(preparedDecisionText.encode(preparedWith({ [k]: `x${sep}y` })), undefined, `${k} holding U+${sep.charCodeAt(0).toString(16)}`);
    for (const k of rows) {
      const p = preparedWith();
      assert.equal(preparedDecisionText.encode({ ...p, row: { ...p.row, [k]: `x${sep}y` } }), undefined, `row.${k} holding U+${sep.charCodeAt(0).toString(16)}`);
    }
    assert.equal(preparedDecisionText.encode(preparedWith({ chain: ['a'.repeat(64), `b${sep}`] })), undefined, 'a later commitment of the chain');
  }
  const calls = [
    ...odd.map((args, i) => ({ id: i, name: 'authorize.commitPrepared', args })),
    { id: 10, name: 'authorize.commitPrepared', args: preparedWith() },
    { id: 11, name: 'authorize.commit', args: { anything: ['json', 1, null] } },
  ];
  const message = encodeCalls(calls, jsonProcedures, textProcedures);
  assert.equal(typeof message, 'string', 'every call is text or JSON: the message is one string');
  assert.deepEqual(decodeCalls(message, textProcedures), calls);
});

test('a message holding a call that is neither text nor JSON crosses by structured clone', () => {
  const calls = [
    { id: 1, name: 'authorize.commitPrepared', args: preparedWith() },
    { id: 2, name: 'audit.record', args: { at: new Date(0) } },
  ];
  const message = encodeCalls(calls, jsonProcedures, textProcedures);
  assert.equal(message, calls);
  assert.equal(decodeCalls(message, textProcedures), calls);
});
