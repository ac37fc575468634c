// A real merchant on loopback for execution tests. Each path is one behaviour:
//   /ok      200 at once          /slow    200 after `slowMs`
//   /refuse  402 (a stated refusal)   /fail 500
//   /hang    never answers (until the server closes)
//   /reset   reads the whole body, then destroys the connection without answering
//   /redirect 302 to /ok (must not be followed)
//   /hold    200 once the test calls release()
// It verifies the gavel-signature HMAC on every call, and rejects old timestamps as a merchant should
// (a bad or stale signature is answered 401 and counted), and counts the calls it received per
// Idempotency-Key.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { verifySignature } from '../../src/merchants/signature.ts';

export const MERCHANT_SECRET = 'test-merchant-secret-0123456789';
/** How far a signature's time may be from the merchant's clock, in seconds (Stripe's default tolerance). */
const SIGNATURE_TOLERANCE_S = 300;
export const BEHAVIOURS = ['ok', 'slow', 'refuse', 'fail', 'hang', 'reset', 'redirect', 'hold'] as const;

export interface TestMerchant {
  url: string;
  /** Calls received per Idempotency-Key. */
  calls: Map<string, number>;
  totalCalls(): number;
  badSignatures: number;
  /** Bodies received per Idempotency-Key (parsed JSON). */
  bodies: Map<string, unknown>;
  slowMs: number;
  /** Resolves once `n` calls in total have been received. */
  waitForCalls(n: number): Promise<void>;
  /** Answers 200 to every /hold call received so far. */
  release(): void;
  close(): Promise<void>;
}

export async function startMerchant(options: { slowMs?: number } = {}): Promise<TestMerchant> {
  const sockets = new Set<Socket>();
  const hanging = new Set<ServerResponse>();
  const held = new Set<ServerResponse>();
  const waiters: { n: number; resolve: () => void }[] = [];
  let total = 0;
  const m: TestMerchant = {
    url: '', calls: new Map(), bodies: new Map(), badSignatures: 0, slowMs: options.slowMs ?? 200,
    totalCalls: () => total,
    release: () => { for (const r of held) r.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'); held.clear(); },
    waitForCalls: (n) => new Promise((resolve) => { if (total >= n) resolve(); else waiters.push({ n, resolve }); }),
    close: async () => {
      for (const r of [...hanging, ...held]) r.destroy();
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const key = String(req.headers['idempotency-key'] ?? '');
      const signed = { method: req.method ?? '', path: req.url ?? '', idempotencyKey: key, executionId: String(req.headers['gavel-execution-id'] ?? ''), body };
      const signature = req.headers['gavel-signature'] as string | undefined;
      const signedAt = Number(/^t=(\d+),/.exec(signature ?? '')?.[1]);
      if (!verifySignature(MERCHANT_SECRET, signed, signature) || !(Math.abs(Date.now() / 1000 - signedAt) <= SIGNATURE_TOLERANCE_S)) {
        m.badSignatures++;
        res.writeHead(401).end();
        return;
      }
      m.calls.set(key, (m.calls.get(key) ?? 0) + 1);
      try { m.bodies.set(key, JSON.parse(body)); } catch { m.bodies.set(key, body); }
      total++;
      for (const w of [...waiters]) if (total >= w.n) { waiters.splice(waiters.indexOf(w), 1); w.resolve(); }
      const path = new URL(req.url ?? '/', 'http://x').pathname.replace(/^\/api/, '');
      const json = (status: number, data: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(data));
      switch (path) {
        case '/ok': return json(200, { ok: true });
        case '/slow': setTimeout(() => json(200, { ok: true }), m.slowMs); return;
        case '/refuse': return json(402, { error: 'card_declined' });
        case '/fail': return json(500, { error: 'boom' });
        case '/hang': hanging.add(res); return;
        case '/hold': held.add(res); return;
        case '/reset': req.socket.destroy(); return;
        case '/redirect': res.writeHead(302, { location: '/api/ok' }).end(); return;
        default: return json(404, { error: 'no such path' });
      }
    });
  });
  server.on('connection', (s) => { sockets.add(s); s.on('close', () => sockets.delete(s)); });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  m.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api`;
  return m;
}

/**
 * How long Gavel waits for `shop` and `other` by default: room for a call meant to succeed though a
 * loaded machine stalls the process for a second or more (a stall past a short timeout turned a
 * SUCCEEDED call into UNKNOWN). A test whose subject is a call given up uses `short_timeout`.
 */
export const ROOMY_TIMEOUT_MS = 10_000;
/** How long Gavel waits for `short_timeout`: a `hang` there is given up soon, so its test stays quick. */
export const SHORT_TIMEOUT_MS = 300;

/**
 * A merchants file naming `shop` at the test merchant (one operation per behaviour, and `extra`),
 * `other` with only `ok`, both waited for `timeoutMs`, and `short_timeout` with `shop`'s operations
 * waited for SHORT_TIMEOUT_MS.
 */
export function merchantsFile(merchantUrl: string, timeoutMs = ROOMY_TIMEOUT_MS, extra: Record<string, unknown> = {}): string {
  const dir = mkdtempSync(join(tmpdir(), 'gavel-merchants-'));
  const file = join(dir, 'merchants.json');
  const operations = { ...Object.fromEntries(BEHAVIOURS.map((b) => [b, { method: 'POST', path: `/${b}` }])), ...extra };
  writeFileSync(file, JSON.stringify({ merchants: {
    shop: { base_url: merchantUrl, secret: MERCHANT_SECRET, timeout_ms: timeoutMs, operations },
    other: { base_url: merchantUrl, secret: MERCHANT_SECRET, timeout_ms: timeoutMs, operations: { ok: { method: 'POST', path: '/ok' } } },
    short_timeout: { base_url: merchantUrl, secret: MERCHANT_SECRET, timeout_ms: SHORT_TIMEOUT_MS, operations },
  } }));
  return file;
}
