// Local Signer: Ed25519 keys as PKCS#8 PEM files (mode 0600) under `<dataDir>/keys`, created on
// first use. For development and single-machine deployments; the custody component replaces it.
import { createPrivateKey, createPublicKey, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createKeyFile, removeStalePartials, warnIfExposed } from '../lib/key-file.ts';
import type { Signer } from './signer.ts';

/** A key file that exists but holds no usable key: said in one line at start (the operator restores it), never a stack. */
export class SigningKeyDamaged extends Error {}

const NAME_RE = /^[a-z0-9][a-z0-9._-]{0,100}$/;

export class LocalSigner implements Signer {
  readonly #dir: string;
  readonly #keys = new Map<string, KeyObject>();

  constructor(dir: string) {
    this.#dir = dir;
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  }

  #key(name: string): KeyObject {
    const cached = this.#keys.get(name);
    if (cached) return cached;
    if (!NAME_RE.test(name)) throw new Error(`invalid key name ${JSON.stringify(name)}`);
    const file = join(this.#dir, `${name}.pem`);
    removeStalePartials(file);
    let key: KeyObject;
    let pem: Buffer | undefined;
    try {
      pem = readFileSync(file);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    }
    if (pem === undefined) key = this.#create(file);
    else {
      warnIfExposed(file);
      try { key = createPrivateKey(pem); } catch {
        throw new SigningKeyDamaged(`${file} holds no readable private key (empty or damaged): restore it from a backup or from another instance's <data dir>/keys; a new key would not be the one permits and checkpoints were signed with`);
      }
    }
    if (key.asymmetricKeyType !== 'ed25519') throw new SigningKeyDamaged(`${file} holds a ${key.asymmetricKeyType} key, not an Ed25519 one`);
    this.#keys.set(name, key);
    return key;
  }

  /** A new key, created whole and durably; if another process created it first, that one. */
  #create(file: string): KeyObject {
    const { privateKey } = generateKeyPairSync('ed25519');
    try {
      createKeyFile(file, privateKey.export({ type: 'pkcs8', format: 'pem' }).toString());
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      return createPrivateKey(readFileSync(file));
    }
    return privateKey;
  }

  async sign(name: string, message: Uint8Array): Promise<Uint8Array> {
    return new Uint8Array(sign(null, message, this.#key(name)));
  }

  async publicKey(name: string): Promise<Uint8Array> {
    const jwk = createPublicKey(this.#key(name)).export({ format: 'jwk' });
    return new Uint8Array(Buffer.from(jwk.x!, 'base64url'));
  }
}
