// A real Ed25519 signer for tests (node:crypto key pairs), implementing the Signer port.
import { createPrivateKey, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import type { Signer } from '../../../src/signer/signer.ts';

export function rawPublicKey(pub: KeyObject): Uint8Array {
  const jwk = pub.export({ format: 'jwk' });
  return new Uint8Array(Buffer.from(jwk.x as string, 'base64url'));
}

export function keyFromSeed(seed: Uint8Array): KeyObject {
  const der = Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), seed]);
  return createPrivateKey({ key: der, format: 'der', type: 'pkcs8' });
}

export class TestSigner implements Signer {
  readonly #keys = new Map<string, { privateKey: KeyObject; publicKey: KeyObject }>();
  #get(name: string) {
    let k = this.#keys.get(name);
    if (!k) {
      k = generateKeyPairSync('ed25519');
      this.#keys.set(name, k);
    }
    return k;
  }
  async sign(key: string, message: Uint8Array): Promise<Uint8Array> {
    return new Uint8Array(sign(null, message, this.#get(key).privateKey));
  }
  async publicKey(key: string): Promise<Uint8Array> {
    return rawPublicKey(this.#get(key).publicKey);
  }
}
