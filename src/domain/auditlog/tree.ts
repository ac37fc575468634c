// Storage addressing of an append-only RFC 6962 tree as "full subtree" nodes.
//
// Node (level L, index i) is the hash of the complete subtree over leaves [i*2^L, (i+1)*2^L).
// Level 0 holds the leaf hashes. A node is stored once it is complete and never changes, so
// storage is append-only; a tree of size n holds fewer than 2n nodes. Every RFC 6962 subtree
// hash a root or proof needs is either one stored node or the right-fold of a few stored
// nodes (the "right edge" of a tree whose size is not a power of two), so everything here is
// planned as: list the node addresses (one batched query), then assemble.
import { AuditLogError } from './errors.ts';
import { EMPTY_ROOT, nodeHash } from './hash.ts';
import { checkTreeSize, splitPoint } from './size.ts';

export interface NodeAddress {
  readonly level: number;
  readonly index: number;
}

export interface StoredNode extends NodeAddress {
  readonly hash: Uint8Array;
}

/** Returns the stored hash of node (level, index), or undefined when the store lacks it. */
export type NodeReader = (level: number, index: number) => Uint8Array | undefined;

/**
 * A root or proof computation split in two phases. `nodes` is the distinct list of stored
 * nodes to fetch; each entry of `parts` becomes one output hash, the RFC 6962 right-fold
 * H(a, H(b, ... H(y, z))) of its nodes (an empty part is the empty-tree root).
 */
export interface ProofPlan {
  readonly nodes: readonly NodeAddress[];
  readonly parts: readonly (readonly NodeAddress[])[];
}

/** Stable key for maps and SQL tuples. */
export function nodeKey(level: number, index: number): string {
  return `${level}/${index}`;
}

/** Whether node (level, index) is complete, hence stored, in a tree of `size` leaves. */
export function isNodeStored(level: number, index: number, size: number): boolean {
  return (index + 1) * 2 ** level <= size;
}

/**
 * Complete nodes covering [start, end), largest first. Valid for the ranges RFC 6962 uses:
 * `start` aligned to the power of two at or above end - start.
 */
export function rangeNodes(start: number, end: number): NodeAddress[] {
  const out: NodeAddress[] = [];
  let pos = start;
  let level = 0;
  while (2 ** (level + 1) <= end - start) level++;
  for (; level >= 0 && pos < end; level--) {
    const width = 2 ** level;
    if (pos + width <= end) {
      out.push({ level, index: pos / width });
      pos += width;
    }
  }
  return out;
}

function dedupe(parts: (readonly NodeAddress[])[]): ProofPlan {
  const seen = new Map<string, NodeAddress>();
  for (const part of parts) for (const a of part) seen.set(nodeKey(a.level, a.index), a);
  return { nodes: [...seen.values()], parts };
}

/** Plan for MTH of the first `size` leaves. */
export function planRoot(size: number): ProofPlan {
  checkTreeSize(size, 'size');
  return dedupe([rangeNodes(0, size)]);
}

/** Plan for the RFC 9162 §2.1.3.1 inclusion proof of leaf `index` in a tree of `size`. */
export function planInclusion(index: number, size: number): ProofPlan {
  checkTreeSize(index, 'index');
  checkTreeSize(size, 'size');
  if (index >= size) throw new AuditLogError('invalid_size', 'index must be below size');
  const parts: NodeAddress[][] = [];
  // PATH(m, D[start:end]), emitted leaf-side first as the RFC orders it.
  const path = (m: number, start: number, end: number): void => {
    if (end - start <= 1) return;
    const k = splitPoint(end - start);
    if (m < start + k) {
      path(m, start, start + k);
      parts.push(rangeNodes(start + k, end));
    } else {
      path(m, start + k, end);
      parts.push(rangeNodes(start, start + k));
    }
  };
  path(index, 0, size);
  return dedupe(parts);
}

/** Plan for the RFC 9162 §2.1.4.1 consistency proof from size m to size n (empty if m is 0 or n). */
export function planConsistency(m: number, n: number): ProofPlan {
  checkTreeSize(m, 'old size');
  checkTreeSize(n, 'size');
  if (m > n) throw new AuditLogError('invalid_size', 'old size must not exceed size');
  const parts: NodeAddress[][] = [];
  // SUBPROOF(m, D[start:end], b)
  const sub = (mm: number, start: number, end: number, b: boolean): void => {
    if (start + mm === end) {
      if (!b) parts.push(rangeNodes(start, end));
      return;
    }
    const k = splitPoint(end - start);
    if (mm <= k) {
      sub(mm, start, start + k, b);
      parts.push(rangeNodes(start + k, end));
    } else {
      sub(mm - k, start + k, end, false);
      parts.push(rangeNodes(start, start + k));
    }
  };
  if (m > 0 && m < n) sub(m, 0, n, true);
  return dedupe(parts);
}

/** Assembles a plan's output hashes from the fetched nodes. */
export function assemble(plan: ProofPlan, read: NodeReader): Uint8Array[] {
  return plan.parts.map((part) => {
    if (part.length === 0) return EMPTY_ROOT;
    let acc: Uint8Array | undefined;
    for (let i = part.length - 1; i >= 0; i--) {
      const a = part[i] as NodeAddress;
      const h = read(a.level, a.index);
      if (h === undefined) throw new AuditLogError('missing_node', `node ${nodeKey(a.level, a.index)} not found`);
      acc = acc === undefined ? h : nodeHash(h, acc);
    }
    return acc as Uint8Array;
  });
}

/**
 * The last leaf a node covers: (index + 1) * 2^level - 1. Storage keys nodes by (pos, level), so
 * the nodes an append completes are adjacent (every one of them ends at a newly appended leaf).
 */
export function nodePos(level: number, index: number): number {
  return (index + 1) * 2 ** level - 1;
}

/** A NodeReader over nodes fetched in one query. */
export function readerFromNodes(nodes: Iterable<StoredNode>): NodeReader {
  const map = new Map<string, Uint8Array>();
  for (const n of nodes) map.set(nodeKey(n.level, n.index), n.hash);
  return (level, index) => map.get(nodeKey(level, index));
}

export function rootAt(size: number, read: NodeReader): Uint8Array {
  return assemble(planRoot(size), read)[0] as Uint8Array;
}

export function inclusionProof(index: number, size: number, read: NodeReader): Uint8Array[] {
  return assemble(planInclusion(index, size), read);
}

export function consistencyProof(m: number, n: number, read: NodeReader): Uint8Array[] {
  return assemble(planConsistency(m, n), read);
}

/** Nodes an appender must read before appending to a tree of `size`: its current peaks. */
export function planAppend(size: number): NodeAddress[] {
  checkTreeSize(size, 'size');
  return rangeNodes(0, size);
}

export interface AppendResult {
  /** New tree size. */
  readonly size: number;
  /** Root of the new tree. */
  readonly root: Uint8Array;
  /** Nodes that became complete: the new leaves and every interior node they completed. */
  readonly nodes: StoredNode[];
  /** The new tree's peaks, in planAppend(size) order: all the next append reads. */
  readonly peaks: StoredNode[];
}

/**
 * Appends leaf hashes to a tree of `size`, reading only its peaks (planAppend(size)).
 * Persist `nodes` in the same transaction that records the new size.
 */
export function appendLeaves(size: number, leafHashes: readonly Uint8Array[], read: NodeReader): AppendResult {
  checkTreeSize(size, 'size');
  if (!Number.isSafeInteger(size + leafHashes.length)) throw new AuditLogError('invalid_size', 'tree too large');
  const stack: StoredNode[] = planAppend(size).map((a) => {
    const hash = read(a.level, a.index);
    if (hash === undefined) throw new AuditLogError('missing_node', `node ${nodeKey(a.level, a.index)} not found`);
    return { ...a, hash };
  });
  const nodes: StoredNode[] = [];
  let next = size;
  for (const h of leafHashes) {
    let node: StoredNode = { level: 0, index: next, hash: h };
    nodes.push(node);
    // Merge while the new node completes its parent (its left sibling is the previous peak).
    while (node.index % 2 === 1) {
      const left = stack.pop() as StoredNode;
      node = { level: node.level + 1, index: (node.index - 1) / 2, hash: nodeHash(left.hash, node.hash) };
      nodes.push(node);
    }
    stack.push(node);
    next++;
  }
  let root: Uint8Array = EMPTY_ROOT;
  for (let i = stack.length - 1; i >= 0; i--) {
    const h = (stack[i] as StoredNode).hash;
    root = i === stack.length - 1 ? h : nodeHash(h, root);
  }
  return { size: next, root, nodes, peaks: stack };
}
