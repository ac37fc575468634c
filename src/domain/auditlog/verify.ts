// Proof verification exactly as RFC 9162 §2.1.3.2 (inclusion) and §2.1.4.2 (consistency).
// Pure and offline: anyone with the leaf, the path and a checkpoint can run it. Malformed
// input (wrong lengths, non-integer sizes) verifies as false rather than throwing.
import { bytesEqual } from './bytes.ts';
import { HASH_SIZE, nodeHash } from './hash.ts';
import { half, isOdd, isTreeSize } from './size.ts';

const isHash = (h: unknown): h is Uint8Array => h instanceof Uint8Array && h.length === HASH_SIZE;
const allHashes = (p: unknown): p is Uint8Array[] => Array.isArray(p) && p.every(isHash);

/** The root an inclusion proof implies, or undefined when the proof cannot be for (index, size). */
export function rootFromInclusionProof(
  leaf: Uint8Array,
  index: number,
  size: number,
  proof: readonly Uint8Array[],
): Uint8Array | undefined {
  if (!isTreeSize(index) || !isTreeSize(size) || index >= size) return undefined;
  if (!isHash(leaf) || !allHashes(proof)) return undefined;
  let fn = index;
  let sn = size - 1;
  let r = leaf;
  for (const p of proof) {
    if (sn === 0) return undefined;
    if (isOdd(fn) || fn === sn) {
      r = nodeHash(p, r);
      while (!isOdd(fn) && fn !== 0) {
        fn = half(fn);
        sn = half(sn);
      }
    } else {
      r = nodeHash(r, p);
    }
    fn = half(fn);
    sn = half(sn);
  }
  return sn === 0 ? r : undefined;
}

export function verifyInclusion(
  leaf: Uint8Array,
  index: number,
  size: number,
  proof: readonly Uint8Array[],
  root: Uint8Array,
): boolean {
  const r = rootFromInclusionProof(leaf, index, size, proof);
  return r !== undefined && isHash(root) && bytesEqual(r, root);
}

/**
 * Whether `proof` shows the tree of size m with root rootM is a prefix of the tree of size n
 * with root rootN. m = 0 is consistent with anything given an empty proof; m = n needs an
 * empty proof and equal roots.
 */
export function verifyConsistency(
  m: number,
  n: number,
  proof: readonly Uint8Array[],
  rootM: Uint8Array,
  rootN: Uint8Array,
): boolean {
  if (!isTreeSize(m) || !isTreeSize(n) || m > n || !allHashes(proof)) return false;
  if (!isHash(rootN) || (m > 0 && !isHash(rootM))) return false;
  if (m === 0) return proof.length === 0;
  if (m === n) return proof.length === 0 && bytesEqual(rootM, rootN);
  if (proof.length === 0) return false;
  // Step 2: when m is a power of two its root is itself a node of the path.
  const path = isPowerOfTwo(m) ? [rootM, ...proof] : [...proof];
  let fn = m - 1;
  let sn = n - 1;
  while (isOdd(fn)) {
    fn = half(fn);
    sn = half(sn);
  }
  let fr = path[0] as Uint8Array;
  let sr = fr;
  for (let i = 1; i < path.length; i++) {
    const c = path[i] as Uint8Array;
    if (sn === 0) return false;
    if (isOdd(fn) || fn === sn) {
      fr = nodeHash(c, fr);
      sr = nodeHash(c, sr);
      while (!isOdd(fn) && fn !== 0) {
        fn = half(fn);
        sn = half(sn);
      }
    } else {
      sr = nodeHash(sr, c);
    }
    fn = half(fn);
    sn = half(sn);
  }
  return sn === 0 && bytesEqual(fr, rootM) && bytesEqual(sr, rootN);
}

function isPowerOfTwo(x: number): boolean {
  while (x > 1) {
    if (isOdd(x)) return false;
    x = half(x);
  }
  return x === 1;
}
