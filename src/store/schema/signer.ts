// Signing keys the installation uses, by name: the public half only (migration 0903).

export interface SignerKeysTable {
  /** The Signer's key name, e.g. `checkpoint-log` or `permit-<project id>`. */
  name: string;
  /** The raw 32-byte Ed25519 public key, base64url. */
  public_key: string;
  created_at: string;
}

export interface SignerTables {
  signer_keys: SignerKeysTable;
}
