import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EMPTY_ROOT, leafHash, nodeHash } from '../../../src/domain/auditlog/hash.ts';
import {
  appendLeaves,
  assemble,
  consistencyProof,
  inclusionProof,
  isNodeStored,
  nodeKey,
  planAppend,
  planConsistency,
  planInclusion,
  readerFromNodes,
  rootAt,
  type StoredNode,
} from '../../../src/domain/auditlog/tree.ts';
import { verifyConsistency, verifyInclusion } from '../../../src/domain/auditlog/verify.ts';
import { AuditLogError } from '../../../src/domain/auditlog/errors.ts';
import { Reference } from './reference.ts';

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
const hd = (s: string) => new Uint8Array(Buffer.from(s, 'hex'));

// transparency-dev/merkle testonly/constants.go: LeafInputs, NodeHashes and RootHashes.
const LEAF_INPUTS = ['', '00', '10', '2021', '3031', '40414243', '5051525354555657', '606162636465666768696a6b6c6d6e6f'].map(hd);
const NODE_HASHES = [
  [
    '6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d',
    '96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7',
    '0298d122906dcfc10892cb53a73992fc5b9f493ea4c9badb27b791b4127a7fe7',
    '07506a85fd9dd2f120eb694f86011e5bb4662e5c415a62917033d4a9624487e7',
    'bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b',
    '4271a26be0d8a84f0bd54c8c302e7cb3a3b5d1fa6780a40bcce2873477dab658',
    'b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f',
    '46f6ffadd3d06a09ff3c5860d2755c8b9819db7df44251788c7d8e3180de8eb1',
  ],
  [
    'fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125',
    '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e',
    '0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a',
    'ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0',
  ],
  ['d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7', '6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4'],
  ['5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328'],
];
const ROOT_HASHES = [
  'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
  '6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d',
  'fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125',
  'aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77',
  'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
  '4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4',
  '76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef',
  'ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c',
  '5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328',
];

/** An in-memory node store grown one batch at a time through appendLeaves, as a database would. */
function grow(leafData: Uint8Array[], batch = 1) {
  const store = new Map<string, StoredNode>();
  const read = (l: number, i: number) => store.get(nodeKey(l, i))?.hash;
  let size = 0;
  const roots: Uint8Array[] = [EMPTY_ROOT];
  for (let s = 0; s < leafData.length; s += batch) {
    const hashes = leafData.slice(s, s + batch).map(leafHash);
    const res = appendLeaves(size, hashes, read);
    for (const n of res.nodes) {
      assert.ok(!store.has(nodeKey(n.level, n.index)), 'a node is written once');
      store.set(nodeKey(n.level, n.index), n);
    }
    size = res.size;
    roots[size] = res.root;
    // The peaks it reports are exactly what the next append reads, with the stored hashes.
    assert.deepEqual(res.peaks.map((n) => [n.level, n.index]), planAppend(size).map((a) => [a.level, a.index]));
    for (const n of res.peaks) assert.deepEqual(n.hash, read(n.level, n.index));
  }
  return { store, read, size, roots };
}

test('known answers: RFC 6962 leaf inputs give the transparency-dev node and root hashes', () => {
  const { store, read, roots } = grow(LEAF_INPUTS);
  NODE_HASHES.forEach((level, l) => level.forEach((h, i) => assert.equal(hex(read(l, i) as Uint8Array), h)));
  assert.equal(store.size, 15, 'only complete nodes are stored: 8 + 4 + 2 + 1');
  for (let n = 0; n <= 8; n++) {
    assert.equal(hex(rootAt(n, read)), ROOT_HASHES[n], `rootAt(${n})`);
    assert.equal(hex(roots[n] as Uint8Array), ROOT_HASHES[n], `append root ${n}`);
  }
  assert.equal(hex(EMPTY_ROOT), ROOT_HASHES[0]);
});

test('known answers: inclusion and consistency proofs from transparency-dev reference_test.go', () => {
  const { read } = grow(LEAF_INPUTS);
  const inc: [number, number, string[]][] = [
    [0, 1, []],
    [0, 2, ['96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7']],
    [1, 2, ['6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d']],
    [2, 3, ['fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125']],
    [1, 5, ['6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d', '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e', 'bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b']],
    [0, 8, ['96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7', '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e', '6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4']],
    [5, 8, ['bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b', 'ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0', 'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7']],
  ];
  for (const [i, n, want] of inc) {
    const proof = inclusionProof(i, n, read);
    assert.deepEqual(proof.map(hex), want, `inclusion ${i}:${n}`);
    assert.ok(verifyInclusion(leafHash(LEAF_INPUTS[i] as Uint8Array), i, n, proof, hd(ROOT_HASHES[n] as string)));
  }
  const cons: [number, number, string[]][] = [
    [1, 1, []],
    [1, 8, ['96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7', '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e', '6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4']],
    [2, 5, ['5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e', 'bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b']],
    [6, 8, ['0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a', 'ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0', 'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7']],
  ];
  for (const [m, n, want] of cons) {
    const proof = consistencyProof(m, n, read);
    assert.deepEqual(proof.map(hex), want, `consistency ${m}:${n}`);
    assert.ok(verifyConsistency(m, n, proof, hd(ROOT_HASHES[m] as string), hd(ROOT_HASHES[n] as string)));
  }
});

const N = 300;
const data = Array.from({ length: N }, (_, i) => new TextEncoder().encode(`leaf ${i}`));
const ref = new Reference(data);

test(`every size up to ${N}: roots, inclusion proofs match the naive reference and verify`, () => {
  const { read } = grow(data, 7);
  for (let n = 1; n <= N; n++) {
    const root = ref.root(n);
    assert.deepEqual(rootAt(n, read), root, `root ${n}`);
    for (let i = 0; i < n; i++) {
      const proof = inclusionProof(i, n, read);
      assert.deepEqual(proof, ref.inclusion(i, n), `inclusion ${i}:${n}`);
      assert.ok(verifyInclusion(leafHash(data[i] as Uint8Array), i, n, proof, root), `verify ${i}:${n}`);
    }
  }
});

test(`every pair of sizes up to ${N}: consistency proofs match the reference and verify`, () => {
  const { read } = grow(data, 13);
  const roots = Array.from({ length: N + 1 }, (_, n) => rootAt(n, read));
  for (let n = 1; n <= N; n++) {
    for (let m = 0; m <= n; m++) {
      const proof = consistencyProof(m, n, read);
      assert.deepEqual(proof, ref.consistency(m, n), `consistency ${m}:${n}`);
      assert.ok(verifyConsistency(m, n, proof, roots[m] as Uint8Array, roots[n] as Uint8Array), `verify ${m}:${n}`);
    }
  }
});

test('appending in any batch size stores the same nodes and roots', () => {
  const one = grow(data.slice(0, 100), 1);
  for (const batch of [2, 3, 64, 100]) {
    const other = grow(data.slice(0, 100), batch);
    assert.equal(other.store.size, one.store.size);
    for (const [k, v] of one.store) assert.deepEqual(other.store.get(k)?.hash, v.hash, `${batch}: ${k}`);
  }
  // A tree of n leaves stores exactly the complete nodes: 2n - popcount(n).
  assert.equal(one.store.size, 2 * 100 - 3);
});

test('proofs read O(log n) stored nodes, all complete at that size', () => {
  const { read } = grow(data);
  for (const [i, n] of [[0, 300], [299, 300], [150, 257], [5, 6]] as const) {
    const plan = planInclusion(i, n);
    assert.ok(plan.nodes.length <= 2 * Math.ceil(Math.log2(n)), `${i}:${n} reads ${plan.nodes.length}`);
    for (const a of plan.nodes) assert.ok(isNodeStored(a.level, a.index, n));
    assert.deepEqual(assemble(plan, read), inclusionProof(i, n, read));
  }
  for (const [m, n] of [[1, 300], [100, 300], [255, 256], [3, 7]] as const) {
    const plan = planConsistency(m, n);
    for (const a of plan.nodes) assert.ok(isNodeStored(a.level, a.index, n));
  }
  assert.deepEqual(planAppend(300).map((a) => [a.level, a.index]), [[8, 0], [5, 8], [3, 36], [2, 74]]);
});

test('a batched fetch feeds readerFromNodes (one round trip)', () => {
  const { read } = grow(data.slice(0, 77));
  const plan = planInclusion(40, 77);
  const fetched = plan.nodes.map((a) => ({ ...a, hash: read(a.level, a.index) as Uint8Array }));
  assert.deepEqual(assemble(plan, readerFromNodes(fetched)), ref.inclusion(40, 77));
});

test('tampering: altered proofs, leaves, indexes, sizes and roots do not verify', () => {
  const n = 37;
  const { read } = grow(data.slice(0, n));
  const root = rootAt(n, read);
  const i = 21;
  const leaf = leafHash(data[i] as Uint8Array);
  const proof = inclusionProof(i, n, read);
  assert.ok(verifyInclusion(leaf, i, n, proof, root));
  const flipped = proof.map((p, j) => (j === 2 ? Uint8Array.from(p, (b, k) => (k === 0 ? b ^ 1 : b)) : p));
  assert.equal(verifyInclusion(leaf, i, n, flipped, root), false);
  assert.equal(verifyInclusion(leafHash(data[i + 1] as Uint8Array), i, n, proof, root), false);
  assert.equal(verifyInclusion(leaf, i + 1, n, proof, root), false);
  // (the size is bound by the checkpoint: for a leaf in a left perfect subtree, n and n+1
  // share a path, so only sizes that change the path's shape are tested here)
  assert.equal(verifyInclusion(leaf, i, 2 * n, proof, root), false);
  assert.equal(verifyInclusion(leaf, i, n, proof.slice(1), root), false);
  assert.equal(verifyInclusion(leaf, i, n, [...proof, root], root), false);
  assert.equal(verifyInclusion(leaf, i, n, proof, rootAt(n - 1, read)), false);
  assert.equal(verifyInclusion(leaf, n, n, proof, root), false);
  // The leaf data itself (not its leaf hash) must not pass as an interior node.
  assert.equal(verifyInclusion(nodeHash(leaf, leaf), i, n, proof, root), false);
  // Hostile shapes return false instead of throwing.
  assert.equal(verifyInclusion(leaf, -1, n, proof, root), false);
  assert.equal(verifyInclusion(leaf, 1.5, n, proof, root), false);
  assert.equal(verifyInclusion(leaf, i, n, [new Uint8Array(31)], root), false);
  assert.equal(verifyInclusion(leaf, i, n, 'x' as unknown as Uint8Array[], root), false);

  const m = 20;
  const rootM = rootAt(m, read);
  const cproof = consistencyProof(m, n, read);
  assert.ok(verifyConsistency(m, n, cproof, rootM, root));
  assert.equal(verifyConsistency(m, n, cproof, rootAt(m + 1, read), root), false);
  assert.equal(verifyConsistency(m, n, cproof, rootM, rootAt(n - 1, read)), false);
  assert.equal(verifyConsistency(m + 1, n, cproof, rootM, root), false);
  assert.equal(verifyConsistency(m, n, cproof.slice(0, -1), rootM, root), false);
  assert.equal(verifyConsistency(m, n, [], rootM, root), false);
  assert.equal(verifyConsistency(n, m, cproof, root, rootM), false);
  assert.equal(verifyConsistency(n, n, [], root, rootM), false);
  assert.ok(verifyConsistency(n, n, [], root, root));
  assert.ok(verifyConsistency(0, n, [], EMPTY_ROOT, root));
  assert.equal(verifyConsistency(0, n, cproof, EMPTY_ROOT, root), false);

  // A forked log: same first m leaves, different leaf m. Its proof cannot bridge the real roots.
  const forkData = [...data.slice(0, m), new TextEncoder().encode('evil'), ...data.slice(m + 1, n)];
  const fork = grow(forkData);
  const forkProof = consistencyProof(m, n, fork.read);
  assert.ok(verifyConsistency(m, n, forkProof, rootM, rootAt(n, fork.read)));
  assert.equal(verifyConsistency(m, n, forkProof, rootM, root), false);
  assert.equal(verifyConsistency(m + 1, n, consistencyProof(m + 1, n, fork.read), rootAt(m + 1, read), rootAt(n, fork.read)), false);
});

test('bad sizes and missing nodes are typed errors', () => {
  const { read } = grow(data.slice(0, 10));
  const code = (f: () => unknown) => {
    try {
      f();
    } catch (e) {
      assert.ok(e instanceof AuditLogError);
      return e.code;
    }
    return 'no error';
  };
  assert.equal(code(() => inclusionProof(10, 10, read)), 'invalid_size');
  assert.equal(code(() => consistencyProof(11, 10, read)), 'invalid_size');
  assert.equal(code(() => rootAt(-1, read)), 'invalid_size');
  assert.equal(code(() => rootAt(11, read)), 'missing_node');
  assert.equal(code(() => appendLeaves(11, [], read)), 'missing_node');
});
