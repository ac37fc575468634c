// `gavel witness`: a C2SP tlog-witness (https://c2sp.org/tlog-witness) with its own key and
// its own storage. Routes:
//   POST /add-checkpoint             the protocol: cosign a checkpoint consistent with the last one
//   GET  /roots/<hex root>?origin=O  200 + the cosigned checkpoint if this witness ever cosigned
//                                    that root for origin O, 404 if never
//   GET  /                           {name, vkey, origins}
import { NOT_COSIGNED_BODY } from './client.ts';
import Fastify from 'fastify';
import { sign } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { cosignatureMessage, formatCosignatureLine } from '../domain/auditlog/cosignature.ts';
import { formatVkey, parseVkey, SIG_TYPE_COSIGNATURE_V1, SIG_TYPE_ED25519, checkKeyName, type VerifierKey } from '../domain/auditlog/note.ts';
import { checkAddCheckpoint, decideCheckpoint, decisionStatus, type WitnessDecision } from '../domain/auditlog/witness.ts';
import { loadOrCreateWitnessKey } from './key.ts';
import { refuseForeignWitnessDatabase, WitnessStore } from './store.ts';

export interface WitnessLogConfig {
  /** The checkpoint origin line of the log. */
  readonly origin: string;
  /** The log's Ed25519 verifier keys ("name+hexid+base64"), any of which may sign. */
  readonly vkeys: readonly string[];
}

export interface WitnessOptions {
  /** Directory for the witness key and database; created if missing. */
  readonly dataDir: string;
  /** Logs this witness accepts. */
  readonly logs: readonly WitnessLogConfig[];
  /** Key name of the witness (a schema-less URL). Default "localhost/gavel-witness". */
  readonly name?: string;
  /** Default 127.0.0.1. */
  readonly host?: string;
  /** Default 0 (an ephemeral port). */
  readonly port?: number;
  /** Clock in milliseconds, for the cosignature timestamp. Default Date.now. */
  readonly now?: () => number;
}

export interface RunningWitness {
  readonly url: string;
  readonly name: string;
  /** The witness's cosignature/v1 verifier key (type 0x04), for clients to trust. */
  readonly publicKeyVkey: string;
  close(): Promise<void>;
}

const MAX_BODY = 256 * 1024;
const HEX_ROOT = /^[0-9a-f]{64}$/;

export async function startWitness(opts: WitnessOptions): Promise<RunningWitness> {
  const name = opts.name ?? 'localhost/gavel-witness';
  checkKeyName(name);
  const now = opts.now ?? Date.now;
  const logs = new Map<string, VerifierKey[]>();
  for (const l of opts.logs) {
    const keys = l.vkeys.map(parseVkey);
    if (keys.some((k) => k.type !== SIG_TYPE_ED25519)) throw new Error(`log ${l.origin}: vkeys must be Ed25519 (type 0x01)`);
    logs.set(l.origin, [...(logs.get(l.origin) ?? []), ...keys]);
  }
  // Before the key is made: a directory holding another database is left as it was.
  refuseForeignWitnessDatabase(opts.dataDir);
  const key = loadOrCreateWitnessKey(opts.dataDir);
  const store = new WitnessStore(opts.dataDir);
  const publicKeyVkey = formatVkey(name, SIG_TYPE_COSIGNATURE_V1, key.publicKey);

  const app = Fastify({ logger: false, bodyLimit: MAX_BODY });
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));

  app.post('/add-checkpoint', async (req, reply) => {
    let body: string;
    try {
      body = new TextDecoder('utf-8', { fatal: true }).decode(Buffer.isBuffer(req.body) ? req.body : new Uint8Array());
    } catch {
      return reply.code(400).type('text/plain; charset=utf-8').send('body is not UTF-8\n');
    }
    const checked = checkAddCheckpoint(body, logs);
    if (checked.kind === 'reject') return reply.code(checked.status).type('text/plain; charset=utf-8').send(`${checked.reason}\n`);
    const { request, checkpoint, text } = checked;
    // Read the held checkpoint, decide, persist and cosign in one immediate transaction, so two
    // concurrent requests (or two processes on this file) cannot roll the witness back.
    const outcome = store.atomically((): { decision: WitnessDecision; line?: string } => {
      const decision = decideCheckpoint(store.latest(checkpoint.origin), request.oldSize, request.proof, checkpoint);
      if (decision.kind !== 'accept') return { decision };
      const at = now();
      const ts = Math.floor(at / 1000);
      const sig = new Uint8Array(sign(null, cosignatureMessage(text, ts), key.privateKey));
      const line = formatCosignatureLine(name, key.publicKey, ts, sig);
      if (decision.advance) store.setLatest(checkpoint.origin, checkpoint.size, checkpoint.root, at);
      store.recordCosigned({ origin: checkpoint.origin, size: checkpoint.size, root: checkpoint.root, note: request.note + line, cosignedAt: ts });
      return { decision, line };
    });
    const { decision } = outcome;
    const status = decisionStatus(decision);
    if (decision.kind === 'accept') return reply.code(200).type('text/plain; charset=utf-8').send(outcome.line);
    if (decision.kind === 'conflict') return reply.code(status).type('text/x.tlog.size').send(`${decision.size}\n`);
    const reason = decision.kind === 'bad_request' ? decision.reason : 'consistency proof does not verify';
    return reply.code(status).type('text/plain; charset=utf-8').send(`${reason}\n`);
  });

  app.get<{ Params: { root: string }; Querystring: { origin?: string } }>('/roots/:root', async (req, reply) => {
    const origin = req.query.origin;
    const root = req.params.root.toLowerCase();
    if (typeof origin !== 'string' || origin.length === 0 || !HEX_ROOT.test(root)) {
      return reply.code(400).type('text/plain; charset=utf-8').send('need a 64-hex-digit root and ?origin=\n');
    }
    const rec = store.cosignedByRoot(origin, new Uint8Array(Buffer.from(root, 'hex')));
    if (!rec) return reply.code(404).type('text/plain; charset=utf-8').send(NOT_COSIGNED_BODY);
    return reply.code(200).type('text/plain; charset=utf-8').send(rec.note);
  });

  app.get('/', async () => ({ name, vkey: publicKeyVkey, origins: [...logs.keys()] }));

  try {
    await app.listen({ host: opts.host ?? '127.0.0.1', port: opts.port ?? 0 });
  } catch (e) {
    store.close();
    throw e;
  }
  const addr = app.server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  let closed = false;
  return {
    url: `http://${host}:${addr.port}`,
    name,
    publicKeyVkey,
    async close() {
      if (closed) return;
      closed = true;
      await app.close();
      store.close();
    },
  };
}
