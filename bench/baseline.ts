// npm run bench: the harness itself. Gavel's cheapest route (GET /healthz) beside the bare-Fastify
// baseline in the same run, so later benchmarks can be read against both.
import { load, startBaseline, startGavel, table } from './lib/harness.ts';

const baseline = await startBaseline();
const gavel = await startGavel();
try {
  const base = await load({ url: `${baseline.url}/baseline` });
  const health = await load({ url: `${gavel.url}/healthz` });
  const ready = await load({ url: `${gavel.url}/readyz` });
  table([
    { name: 'baseline: bare Fastify constant JSON', load: base },
    { name: 'gavel GET /healthz', load: health, baseline: base },
    { name: 'gavel GET /readyz (SQLite ping)', load: ready, baseline: base },
  ]);
} finally {
  await gavel.stop();
  await baseline.stop();
}
