// The witness's own Ed25519 key: generated on first start into its data directory (PKCS#8 PEM,
// mode 0600) and never shared with the log, so a compromised log cannot cosign for it.
import { createPrivateKey, createPublicKey, generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import { closeSync, fsyncSync, linkSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';

export const WITNESS_KEY_FILE = 'witness-key.pem';

export interface WitnessKey {
  readonly privateKey: KeyObject;
  /** Raw 32-byte Ed25519 public key. */
  readonly publicKey: Uint8Array;
}

/** A key file that exists but holds no usable key: said in one line (the operator restores it), never a stack. */
export class WitnessKeyDamaged extends Error {}

/** Writes the new key durably: the witness's database is synchronous=FULL, and a database that
 * survives a power loss beside an empty key file would make the witness refuse to start, or sign
 * with a key the log does not pin. Written whole under a name of its own, then linked into place:
 * a link never overwrites (EEXIST: another starting process won), and a process starting beside
 * this one never reads the file half written (it read an empty one and refused to start). */
function writeKeyFile(path: string, dataDir: string, pem: string): void {
  const partial = `${path}.${process.pid}.${randomBytes(6).toString('hex')}.partial`;
  try {
    writeWhole(partial, pem);
    linkSync(partial, path);
  } catch (e) {
    // A file system without hard links (SMB and other network shares, FAT): the file is created
    // in place, exclusively, as before links were used; only the half-written read can recur there.
    if (!NO_LINKS.has((e as NodeJS.ErrnoException).code ?? '')) throw e;
    writeWhole(path, pem);
  } finally {
    rmSync(partial, { force: true });
  }
  const dir = openSync(dataDir, 'r');
  try { fsyncSync(dir); } finally { closeSync(dir); }
}

/** What link(2) answers where the file system has no hard links. */
const NO_LINKS = new Set(['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS']);

/** Creates `path` ('wx': never over another's file) holding `text`, flushed. */
function writeWhole(path: string, text: string): void {
  const fd = openSync(path, 'wx', 0o600);
  try { writeSync(fd, text); fsyncSync(fd); } finally { closeSync(fd); }
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
      writeKeyFile(path, dataDir, pem);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      pem = readFileSync(path, 'utf8');
    }
  }
  let privateKey: KeyObject;
  try { privateKey = createPrivateKey(pem); } catch {
    throw new WitnessKeyDamaged(`${path} holds no readable private key (empty or damaged): restore it from a backup; a new key would not be the one the log pins`);
  }
  if (privateKey.asymmetricKeyType !== 'ed25519') throw new WitnessKeyDamaged(`${path} is not an Ed25519 key`);
  const jwk = createPublicKey(privateKey).export({ format: 'jwk' });
  return { privateKey, publicKey: new Uint8Array(Buffer.from(jwk.x as string, 'base64url')) };
}
