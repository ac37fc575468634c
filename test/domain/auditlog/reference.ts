// Naive RFC 6962 reference (recursive over the leaf list, straight from the RFC 9162 §2.1
// definitions), used only to cross-check the storage-addressed implementation. Subtree
// hashes are memoised per (start, end) so checking every size up to 300 stays quick.
import { EMPTY_ROOT, leafHash, nodeHash } from '../../../src/domain/auditlog/hash.ts';

function split(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

export class Reference {
  readonly leaves: Uint8Array[];
  readonly #memo = new Map<string, Uint8Array>();
  constructor(leaves: Uint8Array[]) {
    this.leaves = leaves;
  }

  /** MTH(D[start:end]) */
  mth(start: number, end: number): Uint8Array {
    const key = `${start}:${end}`;
    const hit = this.#memo.get(key);
    if (hit) return hit;
    let h: Uint8Array;
    if (end === start) h = EMPTY_ROOT;
    else if (end - start === 1) h = leafHash(this.leaves[start] as Uint8Array);
    else {
      const k = split(end - start);
      h = nodeHash(this.mth(start, start + k), this.mth(start + k, end));
    }
    this.#memo.set(key, h);
    return h;
  }

  /** PATH(m, D[start:end]) */
  path(m: number, start: number, end: number): Uint8Array[] {
    if (end - start <= 1) return [];
    const k = split(end - start);
    if (m < k) return [...this.path(m, start, start + k), this.mth(start + k, end)];
    return [...this.path(m - k, start + k, end), this.mth(start, start + k)];
  }

  /** SUBPROOF(m, D[start:end], b) */
  subproof(m: number, start: number, end: number, b: boolean): Uint8Array[] {
    if (m === end - start) return b ? [] : [this.mth(start, end)];
    const k = split(end - start);
    if (m <= k) return [...this.subproof(m, start, start + k, b), this.mth(start + k, end)];
    return [...this.subproof(m - k, start + k, end, false), this.mth(start, start + k)];
  }

  root(n: number): Uint8Array {
    return this.mth(0, n);
  }
  inclusion(index: number, n: number): Uint8Array[] {
    return this.path(index, 0, n);
  }
  consistency(m: number, n: number): Uint8Array[] {
    return m === 0 || m === n ? [] : this.subproof(m, 0, n, true);
  }
}
