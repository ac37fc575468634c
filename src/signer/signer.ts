// The one port every signature the service makes goes through (DESIGN.md "Crypto").
// The local implementation keeps Ed25519 keys under the data directory; the custody
// component (a separate process over mutual TLS, keys in PKCS#11) replaces it later.

/** Names of the keys the service signs with. One key per purpose, never shared. */
export type KeyName = string;

export interface Signer {
  /** Raw 64-byte Ed25519 signature over `message` with the named key (created on first use). */
  sign(key: KeyName, message: Uint8Array): Promise<Uint8Array>;
  /** Raw 32-byte Ed25519 public key of the named key (created on first use). */
  publicKey(key: KeyName): Promise<Uint8Array>;
  /** The public key if the named key exists, creating nothing (signer/pinned.ts); absent: publicKey's. */
  heldPublicKey?(key: KeyName): Promise<Uint8Array | undefined>;
}
