// Reading a server's stdout line by line, and V8's --trace-gc lines in it (bench/gc-tail.ts,
// bench/tail-episodes.ts): `[pid:isolate] <ms> ms: <kind> <before> (<committed>) -> <after>
// (<committed>) MB, [pooled: <n> MB, ]<pause> / <external> ms ...`.
import type { Readable } from 'node:stream';

export interface GcLine { isolate: string; kind: 'Scavenge' | 'Mark-Compact'; before: number; after: number; pause: number }

const GC = /^\[\d+:(0x[0-9a-f]+)\]\s+[\d.]+ ms: (Scavenge|Mark-Compact)[^\d]*([\d.]+) \([\d.]+\) -> ([\d.]+) \([\d.]+\) MB, (?:pooled: [\d.]+ MB, )?([\d.]+) \//;

/** One --trace-gc line's collection (heap sizes in MB, pause in ms); undefined for any other line. */
export function parseGcLine(line: string): GcLine | undefined {
  const m = GC.exec(line);
  return m ? { isolate: m[1]!, kind: m[2] as GcLine['kind'], before: Number(m[3]), after: Number(m[4]), pause: Number(m[5]) } : undefined;
}

/** Calls `onLine` with every whole line the stream carries. */
export function eachLine(stream: Readable, onLine: (line: string) => void): void {
  let pending = '';
  stream.on('data', (chunk: Buffer) => {
    pending += chunk.toString('latin1');
    const lines = pending.split('\n');
    pending = lines.pop()!;
    for (const line of lines) onLine(line);
  });
}
