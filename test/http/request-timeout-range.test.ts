// GAVEL_REQUEST_TIMEOUT_MS takes up to 600,000 ms (config/config.ts). Node's http.createServer checks
// headersTimeout against the requestTimeout it is given at construction (300,000 by default when
// none is), so a value above 300 s must reach the server's options too, or the service does not start.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { backends } from '../support/backends.ts';
import { startService } from '../support/service.ts';

test('a request timeout above 300 s starts the service and is the one the server applies', async () => {
  const svc = await startService(backends()[0]!, { requestTimeoutMs: 400_000 });
  try {
    await svc.app.listen({ host: '127.0.0.1', port: 0 });
    assert.ok((svc.app.server.address() as AddressInfo).port > 0);
    assert.equal(svc.app.server.requestTimeout, 400_000);
    assert.equal(svc.app.server.headersTimeout, 400_000);
  } finally { await svc.stop(); }
});
