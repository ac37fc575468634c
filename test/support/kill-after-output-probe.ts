// Preloaded (`--import`) into a `gavel` process by crash tests: the process kills itself with
// SIGKILL right after it writes, synchronously to stdout, text holding GAVEL_TEST_KILL_AFTER_OUTPUT.
// A kill at that exact point, as a power loss there would stop it, without a race against a timer:
// the first start's administrator password is written inside its transaction, before the commit.
import fs from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';

const marker = process.env.GAVEL_TEST_KILL_AFTER_OUTPUT;
const writeSync = fs.writeSync;
if (marker) {
  fs.writeSync = function (this: unknown, ...args: Parameters<typeof writeSync>) {
    const written = writeSync.apply(this, args);
    if (args[0] === 1 && String(args[1]).includes(marker)) process.kill(process.pid, 'SIGKILL');
    return written;
  } as typeof writeSync;
  // main.ts imports writeSync by name: its binding follows the module's export only once synced.
  syncBuiltinESMExports();
}
