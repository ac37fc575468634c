// Ed25519 verification costs ~125 µs a link; the cryptographic part of a permit is a pure function
// of (presented string, project key), so it is cached by that pair. Time, revocation, budgets and
// use counts are never cached: they are checked on every decision.
import { verifyPermitSignatures, type VerifyResult } from '../../domain/permit/index.ts';

const MAX_ENTRIES = 10_000;

export class PermitVerificationCache {
  readonly #entries = new Map<string, VerifyResult>();

  async verify(presented: string, projectId: string, projectPublicKey: Uint8Array): Promise<VerifyResult> {
    const key = `${projectId}\n${Buffer.from(projectPublicKey).toString('base64')}\n${presented}`;
    const hit = this.#entries.get(key);
    if (hit) {
      // Refresh recency: Map iteration order is insertion order, so re-insert.
      this.#entries.delete(key);
      this.#entries.set(key, hit);
      return hit;
    }
    const result = await verifyPermitSignatures(presented, { projectId, projectPublicKey });
    // Only successes are worth keeping; garbage must not evict good entries.
    if (result.ok) {
      if (this.#entries.size >= MAX_ENTRIES) this.#entries.delete(this.#entries.keys().next().value!);
      this.#entries.set(key, result);
    }
    return result;
  }
}
