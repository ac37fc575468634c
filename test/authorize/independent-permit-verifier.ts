// An auditor's verifier for Gavel permits and approval signatures, written from the standards and
// docs/permits.md / docs/approvals.md alone. It shares no code with src/: node:crypto, and the
// `openssl` command-line tool as a second, independent Ed25519 implementation (RFC 8032).
//   - RFC 7515: compact JWS, base64url without padding, the protected header
//   - RFC 7519: registered claims; iat/nbf/exp are NumericDate, iss/sub/aud StringOrURI
//   - RFC 8037: "alg":"EdDSA" with Ed25519; OKP JWK {kty, crv, x}; RFC 7638 thumbprints
//   - W3C did:key: 'z' (multibase base58btc) of 0xed 0x01 (multicodec ed25519-pub) + 32 bytes;
//     the verification method id `did:key:z…#z…`
//   - RFC 8785: the canonical JSON an approver signs
import { createHash, createPublicKey, verify as nodeVerify } from 'node:crypto';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export class VerifierError extends Error {}
function check(ok: unknown, message: string): asserts ok {
  if (!ok) throw new VerifierError(message);
}

// --- RFC 7515 §2: base64url, no padding, no other characters --------------------------------

export function b64uEncode(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('base64').replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** Strict: the URL-safe alphabet only, no '=', and canonical (re-encoding gives the same text). */
export function b64uDecode(s: string): Buffer {
  check(/^[A-Za-z0-9_-]*$/.test(s), `not base64url without padding: ${JSON.stringify(s.slice(0, 20))}`);
  check(s.length % 4 !== 1, 'base64url of impossible length');
  const bytes = Buffer.from(s.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  check(b64uEncode(bytes) === s, 'non-canonical base64url (trailing bits)');
  return bytes;
}

// --- multibase base58btc (the Bitcoin alphabet) ---------------------------------------------

const B58 = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';

export function base58btcEncode(bytes: Uint8Array): string {
  let n = 0n;
  for (const b of bytes) n = n * 256n + BigInt(b);
  let out = '';
  while (n > 0n) { out = B58[Number(n % 58n)] + out; n /= 58n; }
  for (const b of bytes) { if (b !== 0) break; out = '1' + out; }
  return out;
}

export function base58btcDecode(s: string): Buffer {
  let n = 0n;
  for (const c of s) {
    const d = B58.indexOf(c);
    check(d >= 0, `not base58btc: ${JSON.stringify(c)}`);
    n = n * 58n + BigInt(d);
  }
  const bytes: number[] = [];
  while (n > 0n) { bytes.unshift(Number(n % 256n)); n /= 256n; }
  for (const c of s) { if (c !== '1') break; bytes.unshift(0); }
  return Buffer.from(bytes);
}

// --- did:key (Ed25519) ----------------------------------------------------------------------

/** The raw 32-byte Ed25519 key a did:key names; throws for anything else. */
export function didKeyToRaw(did: string): Buffer {
  check(did.startsWith('did:key:z'), `${did} is not a did:key with a base58btc ('z') multibase value`);
  const bytes = base58btcDecode(did.slice('did:key:z'.length));
  check(bytes.length === 34 && bytes[0] === 0xed && bytes[1] === 0x01, `${did} does not decode to the multicodec ed25519-pub (0xed 0x01) and 32 bytes`);
  return bytes.subarray(2);
}

export function didKeyFromRaw(raw: Uint8Array): string {
  check(raw.length === 32, 'an Ed25519 public key is 32 bytes');
  return `did:key:z${base58btcEncode(Buffer.concat([Buffer.from([0xed, 0x01]), raw]))}`;
}

/** The did:key method's verification method id: the DID, '#', its multibase value. */
export function didKeyVerificationMethod(did: string): string {
  return `${did}#${did.slice('did:key:'.length)}`;
}

// --- keys: JWK (RFC 8037), thumbprint (RFC 7638), SPKI for openssl --------------------------

export function okpJwk(raw: Uint8Array): { kty: 'OKP'; crv: 'Ed25519'; x: string } {
  return { kty: 'OKP', crv: 'Ed25519', x: b64uEncode(raw) };
}

/** RFC 7638 §3.2: the required members only, lexicographic order, no whitespace; SHA-256, base64url. */
export function jwkThumbprint(raw: Uint8Array): string {
  return b64uEncode(createHash('sha256').update(`{"crv":"Ed25519","kty":"OKP","x":"${b64uEncode(raw)}"}`, 'utf8').digest());
}

// RFC 8410: SubjectPublicKeyInfo of id-Ed25519 (1.3.101.112) is this 12-byte prefix and the key.
const SPKI_ED25519_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

function spkiPem(raw: Uint8Array): string {
  const der = Buffer.concat([SPKI_ED25519_PREFIX, raw]).toString('base64');
  return `-----BEGIN PUBLIC KEY-----\n${der}\n-----END PUBLIC KEY-----\n`;
}

function inTemp<T>(f: (dir: string) => T): T {
  const dir = mkdtempSync(join(tmpdir(), 'gavel-openssl-'));
  try { return f(dir); } finally { rmSync(dir, { recursive: true, force: true }); }
}

/** Ed25519 verification by node:crypto, the key imported as an RFC 8037 JWK. */
export function verifyWithNode(raw: Uint8Array, message: Uint8Array, signature: Uint8Array): boolean {
  const key = createPublicKey({ key: okpJwk(raw), format: 'jwk' });
  return nodeVerify(null, message, key, signature);
}

/** Ed25519 verification by the openssl tool (`pkeyutl -verify -rawin`): PureEdDSA over the raw message. */
export function verifyWithOpenssl(raw: Uint8Array, message: Uint8Array, signature: Uint8Array): boolean {
  return inTemp((dir) => {
    writeFileSync(join(dir, 'pub.pem'), spkiPem(raw));
    writeFileSync(join(dir, 'msg'), message);
    writeFileSync(join(dir, 'sig'), signature);
    const r = spawnSync('openssl', ['pkeyutl', '-verify', '-pubin', '-inkey', join(dir, 'pub.pem'), '-rawin', '-in', join(dir, 'msg'), '-sigfile', join(dir, 'sig')], { encoding: 'utf8' });
    return r.status === 0 && /Signature Verified Successfully/.test(r.stdout);
  });
}

/** Both implementations must accept; a disagreement between them is itself a failure. */
export function verifyEd25519(raw: Uint8Array, message: Uint8Array, signature: Uint8Array, what: string): void {
  check(signature.length === 64, `${what}: an Ed25519 signature is 64 bytes, got ${signature.length}`);
  const byNode = verifyWithNode(raw, message, signature);
  const byOpenssl = verifyWithOpenssl(raw, message, signature);
  check(byNode === byOpenssl, `${what}: node:crypto says ${byNode}, openssl says ${byOpenssl}`);
  check(byNode, `${what}: the Ed25519 signature does not verify`);
}

/** An Ed25519 key made by `openssl genpkey`, as an agent or approver with standard tools would. */
export interface OpensslKey { pem: string; raw: Buffer; did: string; sign(message: Uint8Array): Buffer }

export function opensslKey(): OpensslKey {
  const pem = execFileSync('openssl', ['genpkey', '-algorithm', 'ed25519'], { encoding: 'utf8' });
  const der = execFileSync('openssl', ['pkey', '-pubout', '-outform', 'DER'], { input: pem });
  check(der.length === 44 && der.subarray(0, 12).equals(SPKI_ED25519_PREFIX), 'openssl gave an Ed25519 SPKI');
  const raw = der.subarray(12);
  return {
    pem, raw, did: didKeyFromRaw(raw),
    sign: (message) => inTemp((dir) => {
      writeFileSync(join(dir, 'key.pem'), pem);
      writeFileSync(join(dir, 'msg'), message);
      execFileSync('openssl', ['pkeyutl', '-sign', '-rawin', '-inkey', join(dir, 'key.pem'), '-in', join(dir, 'msg'), '-out', join(dir, 'sig')]);
      return readFileSync(join(dir, 'sig'));
    }),
  };
}

// --- JWS / JWT -------------------------------------------------------------------------------

export const PERMIT_TYP = 'gavel-permit+jwt';

export interface Link {
  jws: string;
  header: { alg: string; typ: string; kid: string };
  claims: Record<string, unknown> & { iss: string; sub: string; aud: string; jti: string; iat: number; nbf: number; exp: number; gavel: Record<string, unknown> };
  signingInput: Buffer;
  signature: Buffer;
  commitment: string;
}

function jsonObject(segment: string, what: string): Record<string, unknown> {
  const text = new TextDecoder('utf-8', { fatal: true }).decode(b64uDecode(segment));
  const value: unknown = JSON.parse(text);
  check(typeof value === 'object' && value !== null && !Array.isArray(value), `${what} is not a JSON object`);
  return value as Record<string, unknown>;
}

// RFC 3986 §3.1 scheme, then a colon: a StringOrURI holding ':' must be a URI (RFC 7519 §2).
const URI = /^[A-Za-z][A-Za-z0-9+.-]*:[^\s]*$/;
function stringOrUri(v: unknown, name: string): void {
  check(typeof v === 'string' && v.length > 0, `${name} must be a non-empty string`);
  if (v.includes(':')) check(URI.test(v), `${name} holds ':' but is not a URI: ${v}`);
}
// RFC 7519 §2 NumericDate: a JSON number of seconds since the epoch; Gavel's are whole seconds.
function numericDate(v: unknown, name: string): asserts v is number {
  check(typeof v === 'number' && Number.isSafeInteger(v) && v >= 0, `${name} must be a NumericDate in whole seconds, got ${JSON.stringify(v)}`);
  check(v < 1e11, `${name} = ${v} looks like milliseconds, not seconds`);
}

/** permit_commitment (docs/permits.md): lowercase hex SHA-256 of the bytes of one link's compact JWS (ASCII). */
export function commitment(jws: string): string {
  check(/^[\x21-\x7e]+$/.test(jws), 'a compact JWS is ASCII');
  return createHash('sha256').update(Buffer.from(jws, 'ascii')).digest('hex');
}

/** Parses one link: RFC 7515 §7.1 compact form, the header exactly as docs/permits.md gives it, RFC 7519 claim types. */
export function parseLink(jws: string): Link {
  const parts = jws.split('.');
  check(parts.length === 3, 'a compact JWS has three parts');
  const [h, p, s] = parts as [string, string, string];
  const header = jsonObject(h, 'the protected header');
  check(JSON.stringify(Object.keys(header).sort()) === '["alg","kid","typ"]', `header members are exactly alg, typ, kid; got ${Object.keys(header)}`);
  check(header.alg === 'EdDSA', `alg must be "EdDSA" (RFC 8037 §3.1), got ${String(header.alg)}`);
  check(header.typ === PERMIT_TYP, `typ must be ${PERMIT_TYP}`);
  check(typeof header.kid === 'string' && header.kid.length > 0, 'kid is a string');
  const claims = jsonObject(p, 'the payload');
  const allowed = ['iss', 'sub', 'aud', 'jti', 'iat', 'nbf', 'exp', 'gavel'];
  for (const k of Object.keys(claims)) check(allowed.includes(k), `unexpected claim ${k}`);
  for (const k of allowed) check(k in claims, `claim ${k} is required by docs/permits.md`);
  stringOrUri(claims.iss, 'iss');
  stringOrUri(claims.sub, 'sub');
  stringOrUri(claims.aud, 'aud');
  check(typeof claims.jti === 'string' && claims.jti.length > 0, 'jti is a string');
  numericDate(claims.iat, 'iat');
  numericDate(claims.nbf, 'nbf');
  numericDate(claims.exp, 'exp');
  check(claims.nbf < claims.exp, 'nbf < exp');
  check(typeof claims.gavel === 'object' && claims.gavel !== null && !Array.isArray(claims.gavel), 'gavel is an object');
  const signature = b64uDecode(s);
  return {
    jws, header: header as Link['header'], claims: claims as Link['claims'],
    signingInput: Buffer.from(`${h}.${p}`, 'ascii'), signature, commitment: commitment(jws),
  };
}

/** Builds and signs one link as a third party would: JSON, base64url, sign the ASCII signing input. */
export function signLink(header: Record<string, unknown>, claims: Record<string, unknown>, sign: (m: Uint8Array) => Uint8Array): string {
  const input = `${b64uEncode(Buffer.from(JSON.stringify(header), 'utf8'))}.${b64uEncode(Buffer.from(JSON.stringify(claims), 'utf8'))}`;
  return `${input}.${b64uEncode(sign(Buffer.from(input, 'ascii')))}`;
}

/**
 * Verifies a presented permit `root~…~leaf` link by link, as docs/permits.md states the rules:
 * root issued by the project and signed by its key (kid its RFC 7638 thumbprint), each child issued
 * by its parent's subject, kid the issuer's did:key verification method, naming its parent's
 * commitment, never outliving it, and signed by the key its issuer DID names.
 */
export function verifyChain(presented: string, ctx: { projectId: string; projectKey: Uint8Array }): Link[] {
  const links = presented.split('~').map(parseLink);
  links.forEach((link, i) => {
    const c = link.claims;
    check(c.aud === ctx.projectId, `link ${i}: aud is the project`);
    const g = link.claims.gavel;
    if (i === 0) {
      check(c.iss === `gavel:project:${ctx.projectId}`, 'root iss names the project');
      check(link.header.kid === jwkThumbprint(ctx.projectKey), 'root kid is the RFC 7638 thumbprint of the project permit key');
      check(!('parent' in g), 'a root names no parent');
      verifyEd25519(ctx.projectKey, link.signingInput, link.signature, 'root');
    } else {
      const parent = links[i - 1]!;
      check(c.iss === parent.claims.sub, `link ${i}: iss is the parent's sub`);
      check(link.header.kid === didKeyVerificationMethod(c.iss), `link ${i}: kid is the issuer's did:key verification method`);
      check(g.parent === parent.commitment, `link ${i}: gavel.parent is the parent's commitment`);
      check(c.nbf >= parent.claims.nbf && c.exp <= parent.claims.exp, `link ${i}: within the parent's time`);
      verifyEd25519(didKeyToRaw(c.iss), link.signingInput, link.signature, `link ${i}`);
    }
    didKeyToRaw(c.sub);
  });
  return links;
}

// --- RFC 8785 (JCS), for the values an approval statement holds ------------------------------

export function jcs(v: unknown): string {
  if (v === null || typeof v === 'boolean' || typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'number') { check(Number.isFinite(v), 'JCS numbers are finite'); return JSON.stringify(v); }
  if (Array.isArray(v)) return `[${v.map(jcs).join(',')}]`;
  check(typeof v === 'object', 'a JSON value');
  // §3.2.3: members sorted by their names' UTF-16 code units.
  const keys = Object.keys(v as object).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${keys.map((k) => `${JSON.stringify(k)}:${jcs((v as Record<string, unknown>)[k])}`).join(',')}}`;
}
