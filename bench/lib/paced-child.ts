// Runs one open loop (pacedLoad) in a process of its own and prints its result as one JSON line.
// The benchmark's own process has driven minutes of autocannon sweeps before its half-max run, and
// the garbage they leave makes its collector pause for 3–14 ms at a time while it paces requests:
// every such pause leaves responses unread and counts in the latency it records (session 19).
import { pacedLoad, type PacedOptions } from './paced.ts';

const [argument] = process.argv.slice(2);
if (argument === undefined) throw new Error('usage: paced-child.ts <pacedLoad options as JSON>');
const options = JSON.parse(argument) as PacedOptions;
const result = await pacedLoad(options);
process.stdout.write(JSON.stringify(result) + '\n');
