// Ad-hoc: profile `gavel serve` under authorize load (not part of the bench suite). Prints the
// load's figures, the server's CPU time per request (a steadier figure than req/s on a noisy VM)
// split by thread (main, the SQLite writer, libuv's pool where fdatasync runs, GC helpers), and
// its resident memory.
import { load, residentMb, startGavel, threadCpu } from './lib/harness.ts';
import { authorizeRequest, prepareProject } from './lib/fixtures.ts';
import { pacedLoadFresh } from './lib/paced.ts';
import { countFromEnv } from './lib/env-count.ts';
// Read before anything starts, so a bad value leaves no server behind.
const secs = countFromEnv('SECS', 6);
const CONNS = countFromEnv('CONNS', 20, { max: 10_000 });
const PACED_CONNS = countFromEnv('PACED_CONNS', 128, { max: 10_000 });
const project = await prepareProject();
const gavel = await startGavel({ GAVEL_DATA_DIR: project.dataDir, NODE_OPTIONS: process.env.PROF ? `--cpu-prof --cpu-prof-dir=/work/prof` : (process.env.NODEOPTS ?? '') });
const opts = authorizeRequest(gavel.url, project);
await load({ ...opts, duration: 2 });
const pid = gavel.child.pid!;
/** The server's CPU per request since `before`, in all and by thread (threads under 1 µs left out). */
const cpuSince = (before: Map<string, number>, requests: number): string => {
  const split = [...threadCpu(pid)].map(([k, v]) => [k, (v - (before.get(k) ?? 0)) / requests] as const).filter(([, v]) => v >= 1).sort((a, b) => b[1] - a[1]);
  const total = split.reduce((s, [, v]) => s + v, 0);
  return `server CPU ${total.toFixed(0)} µs/request (${split.map(([k, v]) => `${k} ${v.toFixed(0)}`).join(', ')})`;
};
const before = threadCpu(pid);
const r = await load({ ...opts, duration: secs, connections: CONNS });
console.log(JSON.stringify(r), `${cpuSince(before, r.rps * secs)}, rss ${residentMb(pid).toFixed(0)} MB`);
if (process.env.HALF) {
  const c1 = threadCpu(pid);
  const paced = await pacedLoadFresh({ ...opts, rate: Math.floor(r.rps / 2), duration: 6, connections: PACED_CONNS });
  console.log('paced half max', JSON.stringify(paced), cpuSince(c1, paced.rps * 6));
  if (process.env.AUTOCANNON_HALF) console.log('autocannon overallRate half max', JSON.stringify(await load({ ...opts, duration: 6, overallRate: Math.floor(r.rps / 2) })));
}
await gavel.stop();
