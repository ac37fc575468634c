// The client a request comes from, as throttling per address counts it: one key per client, whatever
// spelling of its address arrives (pure; services/identity/throttle.ts builds its keys with it).
import { isIP } from 'node:net';

/**
 * One key per client, for throttling per address: a proxy may append `ip:port` (`[v6]:port`) to
 * X-Forwarded-For, and an IPv4 client may arrive IPv4-mapped (`::ffff:a.b.c.d`); each spelling
 * would otherwise count as a fresh address. An IPv6 client is its /64: one subscriber holds the
 * whole prefix, and could otherwise take a fresh address for every attempt.
 */
export function clientAddress(ip: string): string {
  let a = ip.trim();
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(a);
  if (bracketed) a = bracketed[1]!;
  const v4port = /^(\d{1,3}(?:\.\d{1,3}){3}):\d+$/.exec(a);
  if (v4port) a = v4port[1]!;
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(a);
  if (mapped) a = mapped[1]!;
  if (isIP(a) === 6) return `${ipv6Groups(a).slice(0, 4).join(':')}::/64`;
  return a.toLowerCase();
}

/** The eight 16-bit groups of an IPv6 address, lower-case hex without leading zeros. */
function ipv6Groups(address: string): string[] {
  const [head = '', tail] = address.toLowerCase().split('::');
  const part = (s: string | undefined) => (s ? s.split(':') : []);
  const left = part(head);
  const right = part(tail);
  const last = (tail === undefined ? left : right).at(-1) ?? '';
  // A trailing dotted quad is two groups.
  if (last.includes('.')) {
    const n = last.split('.').map(Number);
    const quad = [((n[0]! << 8) | n[1]!).toString(16), ((n[2]! << 8) | n[3]!).toString(16)];
    if (tail === undefined) left.splice(-1, 1, ...quad); else right.splice(-1, 1, ...quad);
  }
  const zeros = tail === undefined ? [] : Array<string>(8 - left.length - right.length).fill('0');
  return [...left, ...zeros, ...right].map((g) => parseInt(g, 16).toString(16));
}
