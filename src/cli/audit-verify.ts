// `gavel audit verify <proof.json> --log-key VKEY --witness-key VKEY`: checks an exported proof
// offline, with public keys alone. The file is the output of
// GET /v1/projects/{projectId}/audit/{auditId}/proof, which carries the event record itself.
// Checks, in order: the event is the one named; its leaf hash (leaf_version gavel-audit-v1);
// the checkpoint's signature by the log key; tree_size, anchored_height and root against it; the RFC 9162 inclusion path to the checkpoint's
// root; a valid cosignature by every witness key given. Exit 0 verified, 1 not (a damaged file
// included), 2 usage error (the command line, a file it cannot read, or an error answer in its place).
import { bytesEqual, fromBase64 } from '../domain/auditlog/bytes.ts';
import { openCheckpoint } from '../domain/auditlog/checkpoint.ts';
import { verifyCosignatures } from '../domain/auditlog/cosignature.ts';
import { LEAF_VERSION, leafHashOfEvent, type AuditEventRecord } from '../domain/auditlog/leaf.ts';
import type { VerifierKey } from '../domain/auditlog/note.ts';
import { verifyInclusion } from '../domain/auditlog/verify.ts';
import { checkerArgs, DamagedFile, fileObject, readJsonFile, repeatedReason } from './json-file.ts';

export const AUDIT_VERIFY_USAGE = `usage: gavel audit verify <proof.json> --log-key <vkey> --witness-key <vkey> [--witness-key …]
       gavel audit verify <proof.json> --log-key <vkey> --allow-unwitnessed
exit status: 0 VERIFIED, 1 NOT VERIFIED (with the reason; a damaged file too), 2 a wrong command line, a file it cannot read, or the server's error answer saved in its place`;

export interface Writable { write(s: string): unknown }

interface ProofFile {
  audit_event_id: string;
  leaf_version?: string;
  leaf_index: number;
  tree_size: number;
  /** Spec 2.10: the size of the anchored (witnessed) checkpoint, null when none is configured. */
  anchored_height?: number | null;
  root?: string;
  path: string[];
  checkpoint: string;
  event: AuditEventRecord;
}

/** The proof, and the pointers of members its text names more than once. */
function readProof(file: string): { proof: ProofFile; repeated: string[] } {
  const { value, repeated } = readJsonFile(file, 'proof file');
  const p = fileObject(value, file, 'proof file') as Partial<ProofFile>;
  if (typeof p.audit_event_id !== 'string') throw new DamagedFile('audit_event_id is missing');
  if (!Number.isSafeInteger(p.leaf_index) || !Number.isSafeInteger(p.tree_size)) throw new DamagedFile('leaf_index and tree_size must be integers');
  if (p.anchored_height !== undefined && p.anchored_height !== null && !Number.isSafeInteger(p.anchored_height)) throw new DamagedFile('anchored_height must be an integer or null');
  if (!Array.isArray(p.path) || !p.path.every((x) => typeof x === 'string')) throw new DamagedFile('path must be an array of base64 hashes');
  if (typeof p.checkpoint !== 'string') throw new DamagedFile('checkpoint (the signed note) is missing');
  if (typeof p.event !== 'object' || p.event === null) throw new DamagedFile('event (the audit event record) is missing');
  return { proof: p as ProofFile, repeated };
}

/** Runs the verifier; returns the exit code (0 verified, 1 not verified, 2 usage error). */
export async function runAuditVerify(argv: readonly string[], out: Writable = process.stdout, err: Writable = process.stderr): Promise<number> {
  let file: string;
  let logKey: VerifierKey;
  let witnessKeys: VerifierKey[];
  let allowUnwitnessed: boolean;
  let proof: ProofFile;
  let repeated: string[];
  try {
    let flags: Record<string, boolean>;
    ({ file, logKey, witnessKeys, flags } = checkerArgs(argv, 'proof file', ['allow-unwitnessed']));
    allowUnwitnessed = flags['allow-unwitnessed'] === true;
    if (witnessKeys.length === 0 && !allowUnwitnessed) throw new Error('give --witness-key (or --allow-unwitnessed to check the log signature only)');
    ({ proof, repeated } = readProof(file));
  } catch (e) {
    if (e instanceof DamagedFile) { out.write(`NOT VERIFIED: ${e.message}\n`); return 1; }
    err.write(`gavel audit verify: ${e instanceof Error ? e.message : String(e)}\n${AUDIT_VERIFY_USAGE}\n`);
    return 2;
  }
  const fail = (why: string): number => { out.write(`NOT VERIFIED: ${why}\n`); return 1; };
  // A name given twice: the event a person reads need not be the one checked (cli/json-file.ts).
  const twice = repeatedReason('proof file', repeated);
  if (twice) return fail(twice);

  if (proof.leaf_version !== undefined && proof.leaf_version !== LEAF_VERSION) return fail(`unknown leaf_version ${proof.leaf_version}`);
  if (proof.event.id !== proof.audit_event_id) return fail('the event record is not the event the proof names');
  let leaf: Uint8Array;
  try { leaf = leafHashOfEvent(proof.event); } catch (e) { return fail(`the event cannot be encoded: ${(e as Error).message}`); }
  let cp;
  try { cp = openCheckpoint(proof.checkpoint, [logKey]).checkpoint; } catch (e) { return fail(`the checkpoint is not signed by the log key: ${(e as Error).message}`); }
  if (cp.size !== proof.tree_size) return fail(`tree_size ${proof.tree_size} differs from the checkpoint size ${cp.size}`);
  // What a person reads must be what was checked: a stated anchored height is the checkpoint's size.
  if (typeof proof.anchored_height === 'number' && proof.anchored_height !== cp.size) return fail(`anchored_height ${proof.anchored_height} differs from the checkpoint size ${cp.size}`);
  if (proof.root !== undefined) {
    let root: Uint8Array;
    try { root = fromBase64(proof.root); } catch { return fail('root is not base64'); }
    if (!bytesEqual(root, cp.root)) return fail('root differs from the checkpoint root');
  }
  let path: Uint8Array[];
  try { path = proof.path.map(fromBase64); } catch { return fail('the path holds a value that is not base64'); }
  if (!verifyInclusion(leaf, proof.leaf_index, cp.size, path, cp.root)) {
    return fail(`the event is not leaf ${proof.leaf_index} of the tree of size ${cp.size} (event, path or checkpoint altered)`);
  }
  let cosigned;
  try { cosigned = verifyCosignatures(proof.checkpoint, witnessKeys); } catch (error) { return fail((error as Error).message); }
  for (const w of witnessKeys) {
    if (!cosigned.some((c) => c.witness === w)) return fail(`no valid cosignature by witness ${w.name} on the checkpoint`);
  }
  const by = cosigned.map((c) => `${c.witness.name} at ${new Date(c.timestamp * 1000).toISOString()}`).join(', ');
  out.write(`VERIFIED: ${proof.audit_event_id} is leaf ${proof.leaf_index} of ${cp.origin} at size ${cp.size}${by ? `, cosigned by ${by}` : ' (log signature only; not witnessed)'}\n`);
  return 0;
}
