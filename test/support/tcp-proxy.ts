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
  heal(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(targetUrl: string): Promise<TcpProxy> {
  const target = new URL(targetUrl);
  const open = new Set<Socket>();
  let down = false;
  let parted = false;
  const pairs = new Set<[Socket, Socket]>();
  const join = ([a, b]: [Socket, Socket]) => { a.pipe(b); b.pipe(a); a.resume(); b.resume(); };
  const part = ([a, b]: [Socket, Socket]) => { a.unpipe(b); b.unpipe(a); a.pause(); b.pause(); };
  const server = createServer((client) => {
    client.on('error', () => {});
    if (down) { client.resetAndDestroy(); return; }
    const upstream = connect(Number(target.port || 5432), target.hostname);
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
    const pair: [Socket, Socket] = [client, upstream];
    for (const s of pair) { open.add(s); s.on('close', () => { open.delete(s); pairs.delete(pair); }); }
    pairs.add(pair);
    if (parted) part(pair); else join(pair);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = new URL(targetUrl);
  url.hostname = '127.0.0.1';
  url.port = String((server.address() as AddressInfo).port);
  return {
    url: url.toString(),
    cut() { down = true; for (const s of open) s.resetAndDestroy(); },
    restore() { down = false; },
    partition() { parted = true; pairs.forEach(part); },
    heal() { parted = false; pairs.forEach(join); },
    async close() { down = true; for (const s of open) s.destroy(); await new Promise((resolve) => server.close(resolve)); },
  };
}

/**
 * A PostgreSQL backend whose stores reach the database through a relay (`relay()` once opened):
 * migrated straight, then served through the relay, so a test can cut the service off its database.
 */
export function relayed(backend: Backend, storeOptions: { idleInTransactionMs?: number } = {}): { backend: Backend; relay: () => TcpProxy } {
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
