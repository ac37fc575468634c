// Local Signer: Ed25519 keys as PKCS#8 PEM files (mode 0600) under `<dataDir>/keys`, created on
// first use. For development and single-machine deployments; the custody component replaces it.
import { createPrivateKey, createPublicKey, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createKeyFile, removeStalePartials, warnIfExposed } from '../lib/key-file.ts';
import { makeDirectory } from '../lib/durable-fs.ts';
import type { Signer } from './signer.ts';

/** A key file that exists but holds no usable key: said in one line at start (the operator restores it), never a stack. */
export class SigningKeyDamaged extends Error {}

const NAME_RE = /^[a-z0-9][a-z0-9._-]{0,100}$/;

export class LocalSigner implements Signer {
  readonly #dir: string;
  readonly #keys = new Map<string, KeyObject>();

  // The directory is made with the first key, not here: a start refused before then (a data
  // directory foreign to the database, signer/pinned.ts) leaves the directory as it found it.
  constructor(dir: string) {
    this.#dir = dir;
  }

  /** The named key; undefined, with nothing created, if it has no file (`create`: make one). */
  #key(name: string, create: true): KeyObject;
  #key(name: string, create: boolean): KeyObject | undefined;
  #key(name: string, create: boolean): KeyObject | undefined {
    const cached = this.#keys.get(name);
    if (cached) return cached;
    if (!NAME_RE.test(name)) throw new Error(`invalid key name ${JSON.stringify(name)}`);
    const file = join(this.#dir, `${name}.pem`);
    let key: KeyObject;
    let pem: Buffer | undefined;
    try {
      pem = readFileSync(file);
    } catch (e) {
      // ENOTDIR: a file where the directory should be, said by the mkdir below.
      if (!['ENOENT', 'ENOTDIR'].includes((e as NodeJS.ErrnoException).code ?? '')) throw e;
    }
    if (pem === undefined && !create) return undefined;
    if (pem === undefined) {
      makeDirectory(this.#dir, 0o700);
      removeStalePartials(file);
      key = this.#create(file);
    } else {
      removeStalePartials(file);
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
    return new Uint8Array(sign(null, message, this.#key(name, true)));
  }

  async publicKey(name: string): Promise<Uint8Array> {
    return rawPublic(this.#key(name, true));
  }

  async heldPublicKey(name: string): Promise<Uint8Array | undefined> {
    const key = this.#key(name, false);
    return key && rawPublic(key);
  }
}

function rawPublic(key: KeyObject): Uint8Array {
  const jwk = createPublicKey(key).export({ format: 'jwk' });
  return new Uint8Array(Buffer.from(jwk.x!, 'base64url'));
}
