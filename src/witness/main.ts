// Entry for `gavel witness`: parses flags, starts the witness, stops on SIGINT/SIGTERM/SIGHUP.
//   --data-dir DIR        key and database (default ./data/witness)
//   --host H --port P     default 127.0.0.1:7380
//   --name NAME           witness key name (default localhost/gavel-witness)
//   --log ORIGIN=VKEY     a log it accepts (repeatable); --log VKEY uses the key name as origin
import { parseArgs } from 'node:util';
import { checkKeyName, parseVkey, SIG_TYPE_ED25519 } from '../domain/auditlog/note.ts';
import { startWitness, type RunningWitness, type WitnessLogConfig, type WitnessOptions } from './server.ts';

export const WITNESS_USAGE = `usage: gavel witness --log ORIGIN=VKEY [--log …] [--data-dir DIR] [--host H] [--port P] [--name NAME]
  --log ORIGIN=VKEY   a log it cosigns for (repeatable); --log VKEY takes the origin from the key's name
  --data-dir DIR      its key and database (default ./data/witness)
  --host H --port P   where it listens (default 127.0.0.1:7380)
  --name NAME         its key name (default localhost/gavel-witness)`;

/** A mistake in the command line: said in one line with the usage, never as a stack trace. */
export class WitnessUsageError extends Error {}

export function parseWitnessArgs(argv: readonly string[]): WitnessOptions {
  try {
    return parseOrThrow(argv);
  } catch (e) {
    throw new WitnessUsageError(`${(e as Error).message}\n\n${WITNESS_USAGE}`);
  }
}

function parseOrThrow(argv: readonly string[]): WitnessOptions {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      'data-dir': { type: 'string', default: './data/witness' },
      host: { type: 'string', default: '127.0.0.1' },
      port: { type: 'string', default: '7380' },
      name: { type: 'string' },
      log: { type: 'string', multiple: true, default: [] },
    },
    strict: true,
  });
  const port = Number(values.port);
  if (!/^\d+$/.test(values.port as string) || port > 65535) throw new Error('--port must be 0-65535');
  const byOrigin = new Map<string, string[]>();
  for (const spec of values.log ?? []) {
    // A whole vkey first: its key name may hold '=' (names exclude only spaces, '+' and controls),
    // and ORIGIN=VKEY never reads as one, its key ID binding the name without the 'ORIGIN='. Else
    // split at the first '=': origins hold no '+' (tlog-checkpoint recommends it).
    const eq = spec.indexOf('=');
    const bare = (() => { try { parseVkey(spec); return true; } catch { return false; } })();
    const vkeyOf = (text: string) => {
      let key;
      try { key = parseVkey(text); } catch (e) { throw new Error(`--log ${spec}: not a verifier key (${(e as Error).message})`); }
      // A witness's own (cosignature/v1) key here is a mistake of the command line, not a fault to print a stack for.
      if (key.type !== SIG_TYPE_ED25519) throw new Error(`--log ${spec}: not a log's Ed25519 key (type 0x01); is it a witness key?`);
      return key;
    };
    const [origin, vkey] = !bare && eq > 0 && !spec.slice(0, eq).includes('+') ? [spec.slice(0, eq), spec.slice(eq + 1)] : [vkeyOf(spec).name, spec];
    vkeyOf(vkey);
    byOrigin.set(origin, [...(byOrigin.get(origin) ?? []), vkey]);
  }
  if (byOrigin.size === 0) throw new Error('at least one --log ORIGIN=VKEY is required');
  // Checked here too (startWitness checks it), so that a bad name is a mistake of the command line.
  if (values.name !== undefined) {
    try { checkKeyName(values.name); } catch (e) { throw new Error(`--name ${values.name}: ${(e as Error).message}`); }
  }
  const logs: WitnessLogConfig[] = [...byOrigin].map(([origin, vkeys]) => ({ origin, vkeys }));
  return { dataDir: values['data-dir'] as string, host: values.host as string, port, logs, ...(values.name ? { name: values.name } : {}) };
}

/** The signals that stop it: SIGHUP (a terminal hung up) as well, for it has nothing to reload. */
const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

export async function runWitnessCommand(argv: readonly string[]): Promise<RunningWitness> {
  const w = await startWitness(parseWitnessArgs(argv));
  const stop = () => void w.close().then(() => process.exit(0));
  // Before the line that says it listens: whoever waits for that line may stop it at once.
  if (process.send) {
    // Started by `gavel up` (cli/local-witness.ts): it ends with its parent, however the parent ends,
    // and when its parent closes the channel. A signal to the whole process group (Ctrl-C, systemd's
    // stop, a terminal's hang-up) is the parent's to act on: it stops this witness after its last checkpoint.
    for (const signal of STOP_SIGNALS) process.on(signal, () => {});
    process.once('disconnect', stop);
    if (!process.connected) stop();
  } else {
    for (const signal of STOP_SIGNALS) process.once(signal, stop);
  }
  process.stdout.write(`witness listening on ${w.url}\nwitness vkey ${w.publicKeyVkey}\n`);
  return w;
}

if (import.meta.main) {
  process.umask(0o077);
  runWitnessCommand(process.argv.slice(2)).catch((e: unknown) => {
    process.stderr.write(`gavel witness: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(1);
  });
}
