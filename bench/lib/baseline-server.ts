// The peer every HTTP benchmark is measured beside: a bare Fastify route returning constant JSON.
import Fastify from 'fastify';

const app = Fastify({ logger: false });
const body = { decision: 'ALLOW', reason_code: 'policy_allow', policy_version: 1, request_id: 'req_x', audit_id: 'aud_x' };
app.get('/baseline', async () => body);
app.post('/baseline', async () => body);
await app.listen({ host: '127.0.0.1', port: 0 });
const addr = app.server.address();
process.stdout.write(JSON.stringify({ port: typeof addr === 'object' && addr ? addr.port : 0 }) + '\n');
process.on('SIGTERM', () => { void app.close().then(() => process.exit(0)); });
