// Every instance sharing a database signs with the same keys. The first instance to use a key
// records its public half in `signer_keys`; from then on every instance verifies against that
// record, and an instance whose signer holds another key under the name refuses to sign with it.
// Without this, PostgreSQL instances with data directories of their own each made a permit key, and
// permits issued through one were DENY permit_invalid on the others.
import { Problem } from '../http/problem.ts';
import type { Db } from '../store/store.ts';
import type { KeyName, Signer } from './signer.ts';

const b64 = (key: Uint8Array): string => Buffer.from(key).toString('base64url');

/** 503 to a request that needs the key; at start, `gavel serve` says it in one line and exits 2. */
export class SigningKeyMismatch extends Problem {
  constructor(name: KeyName) {
    super(503, 'signing_key_mismatch', `this instance's signing key "${name}" is not the one the database recorded when another instance first used it, `
      + 'so it signs nothing: every instance sharing a database must hold the same keys (with the local signer, copy the first instance\'s <data dir>/keys, then restart)');
  }
}

export class PinnedSigner implements Signer {
  readonly #inner: Signer;
  readonly #db: Db;
  readonly #recorded = new Map<KeyName, Promise<Uint8Array>>();
  readonly #held = new Map<KeyName, Promise<void>>();

  constructor(inner: Signer, db: Db) {
    this.#inner = inner;
    this.#db = db;
  }

  /** The recorded public key (recorded now, from this instance's signer, if none is). */
  publicKey(name: KeyName): Promise<Uint8Array> {
    let recorded = this.#recorded.get(name);
    if (!recorded) {
      recorded = this.#record(name);
      this.#recorded.set(name, recorded);
      recorded.catch(() => this.#recorded.delete(name));
    }
    return recorded;
  }

  async sign(name: KeyName, message: Uint8Array): Promise<Uint8Array> {
    await this.assertHeld(name);
    return this.#inner.sign(name, message);
  }

  /** Resolves if this instance's signer holds the recorded key; else a 503 `signing_key_mismatch`. */
  assertHeld(name: KeyName): Promise<void> {
    let held = this.#held.get(name);
    if (!held) {
      const checking = this.#check(name);
      this.#held.set(name, checking);
      // A mismatch stands until a restart (the inner signer keeps its key); a failure to read the
      // record (a database outage) is tried again at the next signature, not for ever after.
      checking.catch((e: unknown) => { if (!(e instanceof SigningKeyMismatch) && this.#held.get(name) === checking) this.#held.delete(name); });
      held = checking;
    }
    return held;
  }

  async #check(name: KeyName): Promise<void> {
    // Recorded first (from this signer's key, made now, if none is): a key the record is not of is
    // then never made, so a refused start leaves no key file behind that no database accepts.
    const recorded = await this.publicKey(name);
    const mine = this.#inner.heldPublicKey ? await this.#inner.heldPublicKey(name) : await this.#inner.publicKey(name);
    if (!mine || b64(recorded) !== b64(mine)) throw new SigningKeyMismatch(name);
  }

  async #record(name: KeyName): Promise<Uint8Array> {
    const read = () => this.#db.selectFrom('signer_keys').select('public_key').where('name', '=', name).executeTakeFirst();
    let row = await read();
    if (!row) {
      const mine = await this.#inner.publicKey(name);
      // Two instances may race to record: the first insert stands, and both read it back.
      await this.#db.insertInto('signer_keys').values({ name, public_key: b64(mine), created_at: new Date().toISOString() })
        .onConflict((oc) => oc.column('name').doNothing()).execute();
      row = await read();
      if (!row) throw new Error(`signer key ${name} was not recorded`);
    }
    return new Uint8Array(Buffer.from(row.public_key, 'base64url'));
  }
}
