// The witness's own Ed25519 key: generated on first start into its data directory (PKCS#8 PEM,
// mode 0600) and never shared with the log, so a compromised log cannot cosign for it.
import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createKeyFile, removeStalePartials, warnIfExposed } from '../lib/key-file.ts';
import { makeDirectory } from '../lib/durable-fs.ts';

export const WITNESS_KEY_FILE = 'witness-key.pem';

export interface WitnessKey {
  readonly privateKey: KeyObject;
  /** Raw 32-byte Ed25519 public key. */
  readonly publicKey: Uint8Array;
}

/** A key file that exists but holds no usable key: said in one line (the operator restores it), never a stack. */
export class WitnessKeyDamaged extends Error {}

export function loadOrCreateWitnessKey(dataDir: string): WitnessKey {
  makeDirectory(dataDir, 0o700);
  const path = join(dataDir, WITNESS_KEY_FILE);
  removeStalePartials(path);
  let pem: string;
  try {
    pem = readFileSync(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    const { privateKey } = generateKeyPairSync('ed25519');
    pem = privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
    try {
      // Durably: the witness's database is synchronous=FULL, and a database that survived a power
      // loss beside an empty key file would make the witness refuse to start, or sign with a key
      // the log does not pin.
      createKeyFile(path, pem);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      pem = readFileSync(path, 'utf8');
    }
  }
  warnIfExposed(path);
  let privateKey: KeyObject;
  try { privateKey = createPrivateKey(pem); } catch {
    throw new WitnessKeyDamaged(`${path} holds no readable private key (empty or damaged): restore it from a backup; a new key would not be the one the log pins`);
  }
  if (privateKey.asymmetricKeyType !== 'ed25519') throw new WitnessKeyDamaged(`${path} is not an Ed25519 key`);
  const jwk = createPublicKey(privateKey).export({ format: 'jwk' });
  return { privateKey, publicKey: new Uint8Array(Buffer.from(jwk.x as string, 'base64url')) };
}
