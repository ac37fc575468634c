// Ad-hoc (not part of the bench suite): does the half-max tail depend on the database's size or on
// how long the server ran at the maximum before? Three conditions, each on a server started afresh,
// in a rotating order so that a slow spell of the VM falls on each alike:
// - fresh:   a new project, WARM_SECS (default 5) s at the maximum;
// - big:     a project filled at the maximum for FILL_SECS (default 100) s first (about 2 GB), then as fresh;
// - history: a new project, HISTORY_SECS (default 64, what bench:authorize's sweep does) s at the maximum.
// Then each runs an open loop at RATE decisions/s (default 10000) for 24 s after a 3 s lead-in, and
// prints its p99 and the server's CPU per decision by thread, TRIALS (default 3) times each.
// Session 18 (docs/performance.md) used it to test session 17's hypothesis that the tail grows with the file.
import { statSync } from 'node:fs';
import { load, startGavel, threadCpu } from './lib/harness.ts';
import { authorizeRequest, prepareProject, type Project } from './lib/fixtures.ts';
import { pacedLoadFresh } from './lib/paced.ts';
import { countFromEnv } from './lib/env-count.ts';

const RATE = countFromEnv('RATE', 10_000, { max: 1_000_000 });
const TRIALS = countFromEnv('TRIALS', 3);
const WARM = countFromEnv('WARM_SECS', 5);
const FILL = countFromEnv('FILL_SECS', 100);
const HISTORY = countFromEnv('HISTORY_SECS', 64);

/** The measured open loop, as bench:authorize's half-max run (decision 0009). */
const OPEN_LOOP = { duration: 24, leadIn: 3 };

const big = await prepareProject();
{
  const gavel = await startGavel({ GAVEL_DATA_DIR: big.dataDir });
  const filled = await load({ ...authorizeRequest(gavel.url, big), connections: 128, duration: FILL });
  await gavel.stop();
  console.log(`big: filled at ${filled.rps.toFixed(0)} decisions/s for ${FILL} s`);
}

const conditions: { name: string; project: () => Promise<Project>; maxSecs: number }[] = [
  { name: 'fresh', project: () => prepareProject(), maxSecs: WARM },
  { name: 'big', project: async () => big, maxSecs: WARM },
  { name: 'history', project: () => prepareProject(), maxSecs: HISTORY },
];
const p99s = new Map<string, number[]>(conditions.map((c) => [c.name, []]));
const megabytes = (project: Project) => Math.round(statSync(`${project.dataDir}/gavel.db`).size / 1e6);

for (let trial = 0; trial < TRIALS; trial++) {
  for (let k = 0; k < conditions.length; k++) {
    const condition = conditions[(trial + k) % conditions.length]!;
    const project = await condition.project();
    const gavel = await startGavel({ GAVEL_DATA_DIR: project.dataDir });
    const pid = gavel.child.pid!;
    const request = authorizeRequest(gavel.url, project, pid);
    const max = await load({ ...request, connections: 128, duration: condition.maxSecs });
    const before = threadCpu(pid);
    const half = await pacedLoadFresh({ ...request, rate: RATE, ...OPEN_LOOP });
    const after = threadCpu(pid);
    await gavel.stop();
    const perDecision = (thread: string) => ((after.get(thread)! - before.get(thread)!) / (RATE * (OPEN_LOOP.duration + OPEN_LOOP.leadIn))).toFixed(1);
    p99s.get(condition.name)!.push(half.p99);
    console.log(`trial ${trial + 1}, ${condition.name.padEnd(7)} (${String(condition.maxSecs).padStart(3)} s at the maximum, ${max.rps.toFixed(0)}/s; file ${megabytes(project)} MB): ` +
      `p99 ${half.p99.toFixed(1)} ms (lead-in ${half.leadInP99.toFixed(1)}), CPU µs a decision: HTTP thread ${perDecision('MainThread')}, writer ${perDecision('WorkerThread')}`);
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
for (const [name, xs] of p99s) console.log(`${name}: p99 median ${median(xs).toFixed(1)} ms, range ${Math.min(...xs).toFixed(1)}–${Math.max(...xs).toFixed(1)}`);
