// A TCP relay in front of PostgreSQL that can be cut and restored: one process's view of a database
// outage (its connections reset, new ones refused at once) while other processes reach the server.
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';

export interface TcpProxy {
  /** The target URL with its host and port replaced by the relay's. */
  url: string;
  /** Resets every relayed connection and refuses new ones until restore(). */
  cut(): void;
  restore(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(targetUrl: string): Promise<TcpProxy> {
  const target = new URL(targetUrl);
  const open = new Set<Socket>();
  let down = false;
  const server = createServer((client) => {
    client.on('error', () => {});
    if (down) { client.resetAndDestroy(); return; }
    const upstream = connect(Number(target.port || 5432), target.hostname);
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
    for (const s of [client, upstream]) { open.add(s); s.on('close', () => open.delete(s)); }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = new URL(targetUrl);
  url.hostname = '127.0.0.1';
  url.port = String((server.address() as AddressInfo).port);
  return {
    url: url.toString(),
    cut() { down = true; for (const s of open) s.resetAndDestroy(); },
    restore() { down = false; },
    async close() { down = true; for (const s of open) s.destroy(); await new Promise((resolve) => server.close(resolve)); },
  };
}
