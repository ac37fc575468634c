// The witness's own Ed25519 key: generated on first start into its data directory (PKCS#8 PEM,
// mode 0600) and never shared with the log, so a compromised log cannot cosign for it.
import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const WITNESS_KEY_FILE = 'witness-key.pem';

export interface WitnessKey {
  readonly privateKey: KeyObject;
  /** Raw 32-byte Ed25519 public key. */
  readonly publicKey: Uint8Array;
}

export function loadOrCreateWitnessKey(dataDir: string): WitnessKey {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const path = join(dataDir, WITNESS_KEY_FILE);
  let pem: string;
  try {
    pem = readFileSync(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    const { privateKey } = generateKeyPairSync('ed25519');
    pem = privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
    try {
      // 'wx': never overwrite a key another starting process wrote first.
      writeFileSync(path, pem, { mode: 0o600, flag: 'wx' });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      pem = readFileSync(path, 'utf8');
    }
  }
  const privateKey = createPrivateKey(pem);
  if (privateKey.asymmetricKeyType !== 'ed25519') throw new Error(`${path} is not an Ed25519 key`);
  const jwk = createPublicKey(privateKey).export({ format: 'jwk' });
  return { privateKey, publicKey: new Uint8Array(Buffer.from(jwk.x as string, 'base64url')) };
}
