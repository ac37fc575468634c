// Client for a C2SP tlog-witness (ours or any other speaking the protocol). Network errors,
// timeouts and 5xx answers are "unavailable", never mistaken for a refusal or a "no".
import { formatAddCheckpointRequest } from '../domain/auditlog/witness.ts';

export type AddCheckpointResult =
  /** 200: the witness's cosignature line(s), each "— name base64\n". */
  | { readonly kind: 'cosigned'; readonly cosignatures: string[] }
  /** 409: the witness holds another size for this origin (retry with `old <size>`). */
  | { readonly kind: 'conflict'; readonly size: number }
  /** 400 / 403 / 404 / 422 (or a 409 without a size): the witness will not cosign this. */
  | { readonly kind: 'refused'; readonly status: number; readonly reason: string }
  | { readonly kind: 'unavailable'; readonly reason: string };

export interface WitnessClientOptions {
  /** Default 5000 ms. */
  readonly timeoutMs?: number;
  /** Ends the wait early (the service stopping): the witness is then "unavailable". */
  readonly signal?: AbortSignal;
}

const deadline = (opts: WitnessClientOptions) => {
  const timeout = AbortSignal.timeout(opts.timeoutMs ?? 5000);
  return opts.signal ? AbortSignal.any([timeout, opts.signal]) : timeout;
};

const base = (url: string) => url.replace(/\/+$/, '');

export async function addCheckpoint(
  url: string,
  oldSize: number,
  proof: readonly Uint8Array[],
  signedNote: string,
  opts: WitnessClientOptions = {},
): Promise<AddCheckpointResult> {
  let res: Response;
  let text: string;
  try {
    res = await fetch(`${base(url)}/add-checkpoint`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain; charset=utf-8' },
      body: formatAddCheckpointRequest(oldSize, proof, signedNote),
      redirect: 'error',
      signal: deadline(opts),
    });
    text = await res.text();
  } catch (e) {
    return { kind: 'unavailable', reason: e instanceof Error ? e.message : String(e) };
  }
  if (res.status === 200) {
    const lines = text.split('\n').filter((l) => l.length > 0);
    if (lines.length === 0 || !lines.every((l) => l.startsWith('\u2014 '))) {
      return { kind: 'unavailable', reason: 'malformed cosignature response' };
    }
    return { kind: 'cosigned', cosignatures: lines.map((l) => `${l}\n`) };
  }
  if (res.status === 409 && /^(0|[1-9][0-9]*)\n$/.test(text) && (res.headers.get('content-type') ?? '').startsWith('text/x.tlog.size')) {
    return { kind: 'conflict', size: Number(text.trim()) };
  }
  if (res.status >= 500) return { kind: 'unavailable', reason: `witness answered ${res.status}` };
  return { kind: 'refused', status: res.status, reason: text.trim().slice(0, 200) };
}

export type CosignedCheckpointResult =
  | { readonly kind: 'found'; readonly note: string }
  | { readonly kind: 'not_found' }
  /** The witness offers no such lookup (a C2SP tlog-witness other than Gavel's: decision 0602). */
  | { readonly kind: 'no_lookup' }
  | { readonly kind: 'unavailable'; readonly reason: string };

/** The body of Gavel's witness's 404 for a root it never cosigned; any other 404 means no lookup. */
export const NOT_COSIGNED_BODY = 'not cosigned\n';

/** The checkpoint (with the witness's cosignature) that the witness cosigned with `root`. */
export async function cosignedCheckpoint(
  url: string,
  origin: string,
  root: Uint8Array,
  opts: WitnessClientOptions = {},
): Promise<CosignedCheckpointResult> {
  try {
    const res = await fetch(`${base(url)}/roots/${Buffer.from(root).toString('hex')}?origin=${encodeURIComponent(origin)}`, {
      redirect: 'error',
      signal: AbortSignal.timeout(opts.timeoutMs ?? 5000),
    });
    const text = await res.text();
    if (res.status === 200) return { kind: 'found', note: text };
    if (res.status === 404) return text === NOT_COSIGNED_BODY ? { kind: 'not_found' } : { kind: 'no_lookup' };
    return { kind: 'unavailable', reason: `witness answered ${res.status}` };
  } catch (e) {
    return { kind: 'unavailable', reason: e instanceof Error ? e.message : String(e) };
  }
}

/**
 * Whether the witness has cosigned a checkpoint with this root for this origin. Callers that
 * need cryptographic evidence should use cosignedCheckpoint and verifyCosignatures instead.
 */
export async function holdsRoot(url: string, origin: string, root: Uint8Array, opts: WitnessClientOptions = {}): Promise<'yes' | 'no' | 'unavailable'> {
  const r = await cosignedCheckpoint(url, origin, root, opts);
  return r.kind === 'found' ? 'yes' : r.kind === 'not_found' ? 'no' : 'unavailable';
}
