// Liveness, readiness and the OpenAPI document.
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { errorResponses } from '../schemas/common.ts';
import { Problem } from '../problem.ts';
import { openRollback } from '../../services/auditlog/continuity.ts';

export async function systemRoutes(app: FastifyInstance): Promise<void> {
  app.get('/healthz', {
    schema: { tags: ['system'], summary: 'Liveness: the process is up', response: { 200: Type.Object({ status: Type.Literal('ok') }), ...errorResponses({ auth: 'none' }) } },
  }, async () => ({ status: 'ok' as const }));

  app.get('/readyz', {
    schema: { tags: ['system'], summary: 'Readiness: the database answers and the audit log was not rolled back', response: { 200: Type.Object({ status: Type.Literal('ready') }), ...errorResponses({ auth: 'none' }, { 503: { what: 'Not ready: the database does not answer, the audit log no longer extends what it signed or the witness holds (rolled back: docs/audit-log.md), or the service is closing (then retry after `retry-after`)', codes: ['not_ready'] } }) } },
  }, async () => {
    if (!(await app.gavel.store.ping())) throw new Problem(503, 'not_ready', 'the database does not answer');
    // Every instance reads what the log's leader found (services/auditlog/continuity.ts): decisions
    // audited now would never be witnessed, which an operator must see before routing traffic here.
    const rollback = await openRollback(app.gavel.store.db).catch(() => { throw new Problem(503, 'not_ready', 'the database does not answer'); });
    if (rollback) throw new Problem(503, 'not_ready', `the audit log was rolled back (found ${rollback.at}): ${rollback.reason ?? ''}; see the console dashboard's audit_log`);
    return { status: 'ready' as const };
  });

  app.get('/openapi.json', {
    schema: { tags: ['system'], summary: 'This OpenAPI 3.1 document', response: { 200: Type.Object({}, { additionalProperties: true }), ...errorResponses({ auth: 'none' }) } },
  }, async () => app.swagger());
}
