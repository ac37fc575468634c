// `gavel audit consistency <consistency.json> --log-key VKEY [--witness-key VKEY …]`: checks offline
// that the log only grew between two checkpoints (invariant 9), with public keys alone. The file is
// the output of GET /v1/projects/{projectId}/audit/consistency?from=M&to=N for two checkpoint sizes.
// Checks: both checkpoints are signed by the log key (and cosigned by every witness key given) and
// have the sizes named; the RFC 9162 consistency proof leads from the older root to the newer. From
// size 0 (the empty tree, which no checkpoint signs and RFC 9162 gives no proof from) the file is
// CONSISTENT once the newer checkpoint checks and the proof is empty, and the answer says so.
// Exit 0 consistent, 1 not, 2 usage error (the command line, a file it cannot read, an error answer
// in its place, or sizes asked for that are not checkpoints: the route's null checkpoints).
import { bytesEqual, fromBase64 } from '../domain/auditlog/bytes.ts';
import { openCheckpoint } from '../domain/auditlog/checkpoint.ts';
import { verifyCosignatures } from '../domain/auditlog/cosignature.ts';
import type { VerifierKey } from '../domain/auditlog/note.ts';
import { EMPTY_ROOT } from '../domain/auditlog/hash.ts';
import { verifyConsistency } from '../domain/auditlog/verify.ts';
import { checkerArgs, DamagedFile, fileObject, readJsonFile, repeatedReason } from './json-file.ts';
import type { Writable } from './audit-verify.ts';

export const AUDIT_CONSISTENCY_USAGE = `usage: gavel audit consistency <consistency.json> --log-key <vkey> [--witness-key <vkey> …]
exit status: 0 CONSISTENT, 1 NOT CONSISTENT (with the reason; a damaged file too), 2 a wrong command line, a file it cannot read, the server's error answer saved in its place, or a file asked for sizes that are not checkpoints`;

interface ConsistencyFile { from: number; to: number; proof: string[]; from_root?: unknown; to_root?: unknown; from_checkpoint: string | null; to_checkpoint: string | null }

/** Runs the check; returns the exit code (0 consistent, 1 not, 2 usage error). */
export async function runAuditConsistency(argv: readonly string[], out: Writable = process.stdout, err: Writable = process.stderr): Promise<number> {
  let file: ConsistencyFile;
  let repeated: string[];
  let logKey: VerifierKey;
  let witnessKeys: VerifierKey[];
  try {
    let path: string;
    ({ file: path, logKey, witnessKeys } = checkerArgs(argv, 'consistency file'));
    const read = readJsonFile(path, 'consistency file');
    repeated = read.repeated;
    const f = fileObject(read.value, path, 'consistency file') as Partial<ConsistencyFile>;
    if (!Number.isSafeInteger(f.from) || !Number.isSafeInteger(f.to)) throw new DamagedFile('from and to must be integers');
    if (!Array.isArray(f.proof) || !f.proof.every((x) => typeof x === 'string')) throw new DamagedFile('proof must be an array of base64 hashes');
    file = f as ConsistencyFile;
  } catch (e) {
    if (e instanceof DamagedFile) { out.write(`NOT CONSISTENT: ${e.message}\n`); return 1; }
    err.write(`gavel audit consistency: ${e instanceof Error ? e.message : String(e)}\n${AUDIT_CONSISTENCY_USAGE}\n`);
    return 2;
  }
  const fail = (why: string): number => { out.write(`NOT CONSISTENT: ${why}\n`); return 1; };
  const twice = repeatedReason('file', repeated);
  if (twice) return fail(twice);
  // Size 0 is the empty tree, which no checkpoint signs: RFC 9162 defines a consistency proof only
  // from a non-empty tree (0 < m < n), and the empty tree is a prefix of every tree. The route answers
  // it with an empty proof and no older checkpoint; that is consistent, with nothing to prove.
  const fromEmpty = file.from === 0 && file.from_checkpoint === null;
  // The route answers a size no checkpoint signs with a null checkpoint: the question was asked
  // wrong, and nothing is known of the log (exit 2, not NOT CONSISTENT, which says it was rewritten).
  const unsigned = [...new Set([...(file.from_checkpoint === null && !fromEmpty ? [file.from] : []), ...(file.to_checkpoint === null ? [file.to] : [])])];
  if (unsigned.length) {
    err.write(`gavel audit consistency: ${notCheckpoints(unsigned)}\n`);
    return 2;
  }
  if (typeof file.to_checkpoint !== 'string' || (typeof file.from_checkpoint !== 'string' && !fromEmpty)) {
    return fail('from_checkpoint and to_checkpoint must be signed checkpoint notes');
  }
  const open = (note: string, size: number, which: string) => {
    const cp = openCheckpoint(note, [logKey]).checkpoint;
    if (cp.size !== size) throw new Error(`the ${which} checkpoint is of size ${cp.size}, not ${size}`);
    for (const w of witnessKeys) {
      if (!verifyCosignatures(note, [w]).length) throw new Error(`no valid cosignature by witness ${w.name} on the ${which} checkpoint`);
    }
    return cp;
  };
  let older;
  let newer;
  try {
    older = fromEmpty ? { origin: undefined, root: EMPTY_ROOT } : open(file.from_checkpoint!, file.from, 'older');
    newer = open(file.to_checkpoint, file.to, 'newer');
  } catch (e) { return fail((e as Error).message); }
  if (older.origin !== undefined && older.origin !== newer.origin) return fail(`the checkpoints are of two logs (${older.origin}, ${newer.origin})`);
  // The roots the file states beside its checkpoints must be the signed ones (the empty tree's, from
  // size 0): a reader takes them from a file this tool called consistent.
  for (const [field, root, whose] of [['from_root', older.root, fromEmpty ? 'the empty tree has' : 'its signed checkpoint states'], ['to_root', newer.root, 'its signed checkpoint states']] as const) {
    const stated = file[field];
    if (stated === undefined) continue;
    let bytes: Uint8Array | undefined;
    try { bytes = typeof stated === 'string' ? fromBase64(stated) : undefined; } catch { bytes = undefined; }
    if (!bytes || !bytesEqual(bytes, root)) return fail(`${field} differs from the root ${whose}`);
  }
  let proof: Uint8Array[];
  try { proof = file.proof.map(fromBase64); } catch { return fail('the proof holds a value that is not base64'); }
  if (!verifyConsistency(file.from, file.to, proof, older.root, newer.root)) {
    return fail(fromEmpty
      ? 'a proof from size 0 (the empty tree) must be empty: RFC 9162 defines none, the empty tree being a prefix of every tree'
      : `the tree of size ${file.to} does not extend the tree of size ${file.from} by this proof (a checkpoint or the proof altered, or the log rewritten)`);
  }
  const cosigned = witnessKeys.length ? `, ${fromEmpty ? 'its checkpoint' : 'both'} cosigned by ${witnessKeys.map((w) => w.name).join(', ')}` : ' (log signatures only)';
  if (fromEmpty) {
    out.write(`CONSISTENT: ${newer.origin} at size ${file.to} extends the empty tree (size 0), as every tree does: RFC 9162 defines no consistency proof from size 0, so only the newer checkpoint was checked${cosigned}\n`);
    return 0;
  }
  out.write(`CONSISTENT: ${newer.origin} at size ${file.to} extends its tree at size ${file.from}${cosigned}\n`);
  return 0;
}

/** Which sizes are not checkpoints, and where checkpoint sizes are found (docs/audit-log.md). */
function notCheckpoints(sizes: number[]): string {
  const named = sizes.length === 1 ? `size ${sizes[0]} is not a checkpoint size` : `sizes ${sizes.join(' and ')} are not checkpoint sizes`;
  return `${named} (the file holds no signed checkpoint for ${sizes.length === 1 ? 'it' : 'them'}), so nothing was checked and nothing is known of the log. `
    + 'Ask for two sizes that are checkpoints: the tree_size of a proof, or the size of a checkpoint kept from GET …/audit/log '
    + '(the second line of its checkpoint or witnessed_checkpoint); from=0, the empty tree, needs none (docs/audit-log.md)';
}
