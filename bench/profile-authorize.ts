// Ad-hoc: profile `gavel serve` under authorize load (not part of the bench suite). Prints the
// load's figures, the server's CPU time per request (a steadier figure than req/s on a noisy VM),
// and its resident memory.
import { readFileSync } from 'node:fs';
import { load, startGavel } from './lib/harness.ts';
import { prepareProject } from './lib/fixtures.ts';
const cpu = (pid: number) => { const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' '); return (Number(f[11]) + Number(f[12])) * 10_000; }; // µs
const rss = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
const project = await prepareProject();
const gavel = await startGavel({ GAVEL_DATA_DIR: project.dataDir, NODE_OPTIONS: process.env.PROF ? `--cpu-prof --cpu-prof-dir=/work/prof` : (process.env.NODEOPTS ?? '') });
const opts = { url: `${gavel.url}/v1/authorize`, method: 'POST' as const, headers: { authorization: `Bearer ${project.key}`, 'content-type': 'application/json' }, body: project.body };
await load({ ...opts, duration: 2 });
const pid = gavel.child.pid!;
const c0 = cpu(pid);
const secs = Number(process.env.SECS ?? 6);
const r = await load({ ...opts, duration: secs });
const used = cpu(pid) - c0;
console.log(JSON.stringify(r), `server CPU ${(used / (r.rps * secs)).toFixed(0)} µs/request, rss ${rss(pid).toFixed(0)} MB`);
if (process.env.HALF) console.log(JSON.stringify(await load({ ...opts, duration: 6, overallRate: Math.floor(r.rps / 2) })));
await gavel.stop();
