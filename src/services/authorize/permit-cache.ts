// Ed25519 verification costs ~125 µs a link; the cryptographic part of a permit is a pure function
// of (presented string, project key), so it is cached by that pair. Time, revocation, budgets and
// use counts are never cached: they are checked on every decision.
import { verifyPermitSignatures, type VerifyResult } from '../../domain/permit/index.ts';

const MAX_ENTRIES = 10_000;

export class PermitVerificationCache {
  // Keyed by the presented string alone; the entry remembers the (project, key) it was verified
  // for, and a hit counts only for that pair. (A compound string key would copy the permit, about
  // a kilobyte, on every request.)
  readonly #entries = new Map<string, { projectId: string; projectPublicKey: Uint8Array; result: VerifyResult }>();

  /** The cached result for this permit under this (project, key), if any (no await on a hit). */
  cached(presented: string, projectId: string, projectPublicKey: Uint8Array): VerifyResult | undefined {
    const hit = this.#entries.get(presented);
    if (!hit || hit.projectId !== projectId || !sameBytes(hit.projectPublicKey, projectPublicKey)) return undefined;
    // Refresh recency: Map iteration order is insertion order, so re-insert.
    this.#entries.delete(presented);
    this.#entries.set(presented, hit);
    return hit.result;
  }

  async verify(presented: string, projectId: string, projectPublicKey: Uint8Array): Promise<VerifyResult> {
    const cached = this.cached(presented, projectId, projectPublicKey);
    if (cached) return cached;
    const hit = this.#entries.get(presented);
    const result = await verifyPermitSignatures(presented, { projectId, projectPublicKey });
    // Only successes are worth keeping; garbage must not evict good entries.
    if (result.ok) {
      if (!hit && this.#entries.size >= MAX_ENTRIES) this.#entries.delete(this.#entries.keys().next().value!);
      this.#entries.set(presented, { projectId, projectPublicKey: Uint8Array.from(projectPublicKey), result });
    }
    return result;
  }
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
