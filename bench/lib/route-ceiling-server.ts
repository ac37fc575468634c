// A peer for bench:authorize, not a mode of Gavel: the real service (every plugin, hook, schema,
// API key check, body parser and serializer of POST /v1/authorize) with the decision itself
// replaced by a constant answer. What it serves per second is the ceiling of the route on this
// machine before any decision work: no permit or policy, no writer thread, no commit, no fsync.
import { loadConfig } from '../../src/config/config.ts';
import { createService } from '../../src/service.ts';
import type { Authorizer, DecisionRecord } from '../../src/services/authorize/authorize.ts';

const service = await createService(loadConfig());
const answer: Omit<DecisionRecord, 'request_id'> = {
  decision_id: 'dec_01kb0000000000000000000000', decision: 'ALLOW', reason_code: 'policy_allow', policy_version: 1,
  matched_rules: [], audit_id: 'aud_01kb0000000000000000000000', permit_commitment: null,
};
const constant: Pick<Authorizer, 'decide'> = { decide: async (ctx) => ({ ...answer, request_id: ctx.requestId }) };
// The routes read the authorizer from the deps object at request time.
(service.deps as { authorizer: Pick<Authorizer, 'decide'> }).authorizer = constant;
await service.app.listen({ host: '127.0.0.1', port: 0 });
const addr = service.app.server.address();
process.stdout.write(JSON.stringify({ port: typeof addr === 'object' && addr ? addr.port : 0 }) + '\n');
process.on('SIGTERM', () => { void service.close().then(() => process.exit(0)); });
