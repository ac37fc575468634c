// The hook every test service carries (test/support/declared-problems.ts) validates each body against
// the response schema its operation declares: here on an app whose serializer lets through what its
// schema forbids (a pattern, a format, an enum value, a problem's code), which is what stop() then names.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Fastify from 'fastify';
import swagger from '@fastify/swagger';
import { recordProblems } from '../support/declared-problems.ts';

test('a body its response schema does not admit is recorded with its route, status and Ajv\'s words', async () => {
  const app = Fastify();
  await app.register(swagger, { openapi: { openapi: '3.1.0', info: { title: 't', version: '1' } } });
  const Thing = {
    type: 'object', required: ['id', 'at', 'kind'],
    properties: { id: { type: 'string', pattern: '^t_' }, at: { type: 'string', format: 'date-time' }, kind: { enum: ['a', 'b'] } },
  };
  const Problem = { type: 'object', required: ['code'], properties: { code: { enum: ['gone'] } } };
  const answers: Record<string, object> = {
    good: { id: 't_1', at: '2026-01-01T00:00:00Z', kind: 'a' },
    bad: { id: 'x_1', at: 'yesterday', kind: 'c' },
  };
  app.get('/things/:id', { schema: { response: { 200: Thing, 404: { content: { 'application/problem+json': { schema: Problem } } } } } }, async (request, reply) => {
    const { id } = request.params as { id: string };
    if (id === 'missing') return reply.code(404).type('application/problem+json').send(JSON.stringify({ code: 'not_found' }));
    return answers[id];
  });
  const { mismatches } = recordProblems(app);
  for (const id of ['good', 'bad', 'bad', 'missing']) await app.inject({ method: 'GET', url: `/things/${id}` });
  await app.inject({ method: 'HEAD', url: '/things/bad' });
  assert.deepEqual([...mismatches], [
    'GET /things/{id} 200: data/id must match pattern "^t_", data/at must match format "date-time", data/kind must be equal to one of the allowed values',
    'GET /things/{id} 404: data/code must be equal to one of the allowed values',
  ]);
  await app.close();
});
