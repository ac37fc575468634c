// Pure core of Gavel's verifiable audit log: RFC 6962 tree, proofs, C2SP checkpoints,
// cosignatures and the witness rule. No I/O, no clock, no randomness.
export * from './errors.ts';
export * from './hash.ts';
export * from './leaf.ts';
export * from './tree.ts';
export * from './verify.ts';
export * from './note.ts';
export * from './checkpoint.ts';
export * from './cosignature.ts';
export * from './witness.ts';
export { toBase64, fromBase64, toHex, fromHex } from './bytes.ts';
