// The first login of an unknown name in a process must cost what any other costs: the dummy hash it
// is verified against is made when the routes are built, not on that first login (a slower answer
// would tell that the name does not exist). Its own file: the hash is made once per process.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { startService } from '../support/service.ts';
import { loginPrepared } from '../../src/services/identity/login.ts';

test('the dummy password hash is made when the service starts, before any login', async () => {
  assert.equal(loginPrepared(), false);
  const svc = await startService(backends()[0]!);
  try {
    assert.equal(loginPrepared(), true);
    const res = await svc.app.inject({ method: 'POST', url: '/v1/console/login', payload: { name: 'nobody-here', password: 'a password of some length' } });
    assert.equal(res.statusCode, 401);
  } finally { await svc.stop(); }
});
