// Ed25519 verification costs ~125 µs a link; the cryptographic part of a permit is a pure function
// of (presented string, project key), so it is cached by that pair. Time, revocation, budgets and
// use counts are never cached: they are checked on every decision.
import { verifyPermitSignatures, type VerifiedPermit, type VerifyResult } from '../../domain/permit/index.ts';

const MAX_ENTRIES = 10_000;
/**
 * Characters of presented text held at most. A permit's verified result costs about twice its text
 * again, so 10,000 chains of 16 KB (an agent may sign as many distinct ones as it likes, delegating
 * to itself) held some 450 MB; this keeps the cache near 25 MB, and 10,000 permits of the usual
 * size (about 750 characters) still fit.
 */
const MAX_CHARS = 8 * 1024 * 1024;

type Entry = { presented: string; projectId: string; projectPublicKey: Uint8Array; result: VerifyResult; used: boolean };

/**
 * The key an entry is filed under: the presented string's last characters, the signature of its
 * last link (a compact JWS ends with it). Hashing the whole string for a Map lookup cost about 1 µs a
 * request (a permit is some 800 characters, parsed afresh from every body); a hit still compares
 * the whole string, so two permits sharing a tail only take turns in one slot.
 */
const keyOf = (presented: string): string => presented.slice(-32);

export class PermitVerificationCache {
  // Filed by the presented string alone (keyOf); the entry remembers the (project, key) it was
  // verified for, and a hit counts only for that pair. (A compound string key would copy the permit,
  // about a kilobyte, on every request.)
  // Eviction is second-chance (CLOCK) rather than strict LRU: a hit only marks its entry used. Moving
  // it to the end of the Map on every hit would churn the Map's tables once per request, and the
  // discarded tables would keep each request's permit string alive into old space
  // (writer/pending-calls.ts says why that matters).
  readonly #entries = new Map<string, Entry>();
  readonly #maxEntries: number;
  readonly #maxChars: number;
  #chars = 0;

  constructor(options: { maxEntries?: number; maxChars?: number } = {}) {
    this.#maxEntries = options.maxEntries ?? MAX_ENTRIES;
    this.#maxChars = options.maxChars ?? MAX_CHARS;
  }

  /** The cached result for this permit under this (project, key), if any (no await on a hit). */
  cached(presented: string, projectId: string, projectPublicKey: Uint8Array): VerifyResult | undefined {
    const hit = this.#entries.get(keyOf(presented));
    if (!hit || hit.presented !== presented || hit.projectId !== projectId || !sameBytes(hit.projectPublicKey, projectPublicKey)) return undefined;
    hit.used = true;
    return hit.result;
  }

  /**
   * `firstSeen` runs once a permit verifies and before it is cached: what must be done once per
   * permit (recording its delegated links) is done before a hit can skip it, and a failure there
   * leaves the permit uncached, so the next decision does it again.
   */
  async verify(presented: string, projectId: string, projectPublicKey: Uint8Array, firstSeen?: (permit: VerifiedPermit) => Promise<void>): Promise<VerifyResult> {
    const cached = this.cached(presented, projectId, projectPublicKey);
    if (cached) return cached;
    const key = keyOf(presented);
    const result = await verifyPermitSignatures(presented, { projectId, projectPublicKey });
    // Only successes are worth keeping; garbage must not evict good entries.
    if (result.ok) {
      if (firstSeen) await firstSeen(result.permit);
      this.#chars -= this.#entries.get(key)?.presented.length ?? 0;
      this.#entries.delete(key);
      while (this.#entries.size > 0 && (this.#entries.size >= this.#maxEntries || this.#chars + presented.length > this.#maxChars)) this.#evictOne();
      this.#entries.set(key, { presented, projectId, projectPublicKey: Uint8Array.from(projectPublicKey), result, used: false });
      this.#chars += presented.length;
    }
    return result;
  }

  /** Drops the oldest entry not used since it was last passed over; used ones go to the back, unmarked. */
  #evictOne(): void {
    for (const [key, entry] of this.#entries) {
      this.#entries.delete(key);
      if (!entry.used) { this.#chars -= entry.presented.length; return; }
      entry.used = false;
      this.#entries.set(key, entry);
    }
  }

  get size(): number { return this.#entries.size; }
  /** Characters of presented text held (at most maxChars). */
  get chars(): number { return this.#chars; }
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
