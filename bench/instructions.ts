// Ad-hoc: instructions per decision, counted by valgrind (callgrind). This is for changes too small
// for req/s or CPU time on a VM whose speed drifts ±10–25%, since instruction counts do not drift
// with the machine. Repeatability differs by thread (two runs each, session 8):
// - the writer thread: within 1% (249k and 250k);
// - the HTTP thread: within 5–9% (581k and 610k after 2,000 decisions of warm-up);
// - the V8 platform thread (GC marking, compilation): not at all (296k and 684k).
// So it measures writer-side changes, and HTTP-side ones of about 10% or more.
//
//   node bench/instructions.ts            the count, printed per decision and by thread
//   node bench/instructions.ts --run F    what valgrind runs (F: the prepared project)
//
// One process runs under valgrind: the real service (SQLite, writer thread, durable commits), fed
// POST /v1/authorize by `inject` with 32 in flight and no sockets. After a warm-up (caches, JIT)
// the counters are zeroed (`callgrind_control -z`); DECISIONS decisions later they are read
// (`callgrind_control -e`). Start-up is not counted. Socket and kernel work is not counted either:
// it is not user-space instructions of this process. ENV: DECISIONS (1000), WARMUP (300).
import { spawn, execFileSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { prepareProject } from './lib/fixtures.ts';
import { gavelNodeArgs } from './lib/harness.ts';
import { countFromEnv } from './lib/env-count.ts';
import { loadConfig } from '../src/config/config.ts';
import { createService } from '../src/service.ts';

const DECISIONS = countFromEnv('DECISIONS', 1000, { max: 1_000_000 });
const WARMUP = countFromEnv('WARMUP', 300, { min: 0, max: 1_000_000 });
const IN_FLIGHT = 32;

if (process.argv[2] === '--run') {
  const { dataDir, key, body } = JSON.parse(readFileSync(process.argv[3]!, 'utf8')) as { dataDir: string; key: string; body: string };
  const service = await createService(loadConfig({}, { dataDir, logLevel: 'warn' }), { logger: false });
  const request = { method: 'POST' as const, url: '/v1/authorize', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, payload: body };
  const decide = async (n: number) => {
    let left = n;
    await Promise.all(Array.from({ length: IN_FLIGHT }, async () => {
      while (left-- > 0) {
        const res = await service.app.inject(request);
        if (res.statusCode !== 200 || res.json().decision !== 'ALLOW') throw new Error(`unexpected answer: ${res.statusCode} ${res.body}`);
      }
    }));
  };
  const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
  await decide(WARMUP);
  process.stdout.write('READY\n');
  await lines.next();
  await decide(DECISIONS);
  process.stdout.write('DONE\n');
  await lines.next();
  await service.close();
  process.exit(0);
} else {
  const spec = join(tmpdir(), `gavel-instructions-${process.pid}.json`);
  writeFileSync(spec, JSON.stringify(await prepareProject()));
  const out = join(tmpdir(), `gavel-callgrind-${process.pid}.out`);
  const child = spawn('valgrind', ['--tool=callgrind', `--callgrind-out-file=${out}`, process.execPath, ...gavelNodeArgs(), new URL(import.meta.url).pathname, '--run', spec], { stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  const control = (...args: string[]) => execFileSync('callgrind_control', [...args, String(child.pid)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  let totals = '';
  for await (const line of createInterface({ input: child.stdout! })) {
    if (line === 'READY') { control('-z'); child.stdin!.write('go\n'); }
    if (line === 'DONE') { totals = control('-e'); child.stdin!.write('exit\n'); }
  }
  const code = await exited;
  rmSync(spec, { force: true });
  rmSync(out, { force: true });
  // "Th 1  90,933,570" lines: thread number and instructions (Ir).
  const threads = [...totals.matchAll(/Th\s+(\d+)\s+([\d,]+)/g)].map((m) => ({ thread: Number(m[1]), ir: Number(m[2]!.replace(/,/g, '')) }));
  if (code !== 0 || threads.length === 0) throw new Error(`valgrind run failed (${code}): ${stderr.slice(-2000)}`);
  const total = threads.reduce((s, t) => s + t.ir, 0);
  const split = threads.filter((t) => t.ir / DECISIONS >= 1000).map((t) => `thread ${t.thread} ${Math.round(t.ir / DECISIONS).toLocaleString('en')}`).join(', ');
  console.log(`instructions per decision (${DECISIONS} after ${WARMUP} of warm-up): ${Math.round(total / DECISIONS).toLocaleString('en')} (${split}; thread 1 answers HTTP, the writer is usually the next)`);
}
