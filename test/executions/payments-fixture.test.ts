// The payments fixture's stop: a service whose stop throws (it sent an answer /openapi.json does
// not declare) must not leave the merchant listening, which kept a failed run's process alive.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { startPayments } from '../support/payments.ts';

for (const backend of backends()) {
  test(`a failed service stop still closes the merchant (${backend.name})`, async () => {
    const p = await startPayments(backend, { actions: ['pay'], resources: ['resource://shop/*'] });
    const stopService = p.svc.stop.bind(p.svc);
    p.svc.stop = async () => { await stopService(); throw new Error('answers sent but not declared in /openapi.json: (staged)'); };
    await assert.rejects(p.stop(), /not declared/);
    await assert.rejects(fetch(`${p.merchant.url}/ok`), 'nothing listens there any more');
  });
}
