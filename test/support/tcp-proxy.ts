// A TCP relay in front of PostgreSQL that can be cut and restored (one process's view of a database
// outage: its connections reset, new ones refused at once) or partitioned and healed (its
// connections silent), while other processes reach the server.
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { openStore, type StoreOptions } from '../../src/store/store.ts';
import type { Backend } from './backends.ts';

export interface TcpProxy {
  /** The target URL with its host and port replaced by the relay's. */
  url: string;
  /** Resets every relayed connection and refuses new ones until restore(). */
  cut(): void;
  restore(): void;
  /**
   * A partition: every relayed connection stays open but carries nothing either way (the bytes wait
   * in the sockets' buffers) until heal(); new connections wait too.
   */
  partition(): void;
  /** Half a partition: what the service sends reaches the server, the server's answers wait (until heal()). */
  deafen(): void;
  heal(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(targetUrl: string): Promise<TcpProxy> {
  const target = new URL(targetUrl);
  const open = new Set<Socket>();
  let down = false;
  let silent: 'no' | 'both ways' | 'to the service' = 'no';
  const pairs = new Set<[Socket, Socket]>();
  // Unpiped first: a direction still flowing (deafen) must not be piped twice.
  const join = ([a, b]: [Socket, Socket]) => { a.unpipe(b); b.unpipe(a); a.pipe(b); b.pipe(a); a.resume(); b.resume(); };
  const deaf = ([a, b]: [Socket, Socket]) => { b.unpipe(a); b.pause(); };
  const part = ([a, b]: [Socket, Socket]) => { deaf([a, b]); a.unpipe(b); a.pause(); };
  const quiet = (pair: [Socket, Socket]) => { if (silent === 'both ways') part(pair); else if (silent === 'to the service') deaf(pair); };
  const server = createServer((client) => {
    client.on('error', () => {});
    if (down) { client.resetAndDestroy(); return; }
    const upstream = connect(Number(target.port || 5432), target.hostname);
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
    const pair: [Socket, Socket] = [client, upstream];
    for (const s of pair) { open.add(s); s.on('close', () => { open.delete(s); pairs.delete(pair); }); }
    pairs.add(pair);
    join(pair);
    quiet(pair);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = new URL(targetUrl);
  url.hostname = '127.0.0.1';
  url.port = String((server.address() as AddressInfo).port);
  return {
    url: url.toString(),
    cut() { down = true; for (const s of open) s.resetAndDestroy(); },
    restore() { down = false; },
    partition() { silent = 'both ways'; pairs.forEach(quiet); },
    deafen() { silent = 'to the service'; pairs.forEach(quiet); },
    heal() { silent = 'no'; pairs.forEach(join); },
    async close() { down = true; for (const s of open) s.destroy(); await new Promise((resolve) => server.close(resolve)); },
  };
}

/**
 * A PostgreSQL backend whose stores reach the database through a relay (`relay()` once opened):
 * migrated straight, then served through the relay, so a test can cut the service off its database.
 */
export function relayed(backend: Backend, storeOptions: { idleInTransactionMs?: number; replyTimeoutMs?: number; connectTimeoutMs?: number } = {}): { backend: Backend; relay: () => TcpProxy } {
  let proxy: TcpProxy | undefined;
  return {
    relay: () => proxy!,
    backend: {
      name: backend.name,
      async open(options) {
        const direct = await backend.open(options);
        const o = direct.options as Extract<StoreOptions, { kind: 'postgres' }>;
        proxy = await startTcpProxy(o.url);
        const through = { ...o, ...storeOptions, url: proxy.url };
        const store = openStore(through);
        const p = proxy;
        return {
          ...direct, store, options: through,
          async cleanup() { await store.close(); await p.close(); await direct.cleanup(); },
        };
      },
    },
  };
}
