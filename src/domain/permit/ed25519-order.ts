// Whether an Ed25519 public key is a point of small order (order 1, 2, 4 or 8), or not a point at
// all. Such a key names no secret: the identity, for one, "verifies" [S]B = R for any message
// under cofactorless checks. OpenSSL refuses to verify with them today, so a registered one would
// only ever fail; it is refused where keys are registered, with a reason, instead.
// Plain BigInt arithmetic on the curve (RFC 8032 §5.1): off the hot path, three doublings.

const P = 2n ** 255n - 19n;
const mod = (a: bigint) => ((a % P) + P) % P;
function pow(b: bigint, e: bigint): bigint {
  let r = 1n;
  for (b = mod(b); e > 0n; e >>= 1n, b = (b * b) % P) if (e & 1n) r = (r * b) % P;
  return r;
}
const inv = (a: bigint) => pow(a, P - 2n);
const D = mod(-121665n * inv(121666n));
const SQRT_M1 = pow(2n, (P - 1n) / 4n);

/** RFC 8032 §5.1.3: the point a 32-byte encoding names, or null (non-canonical, off the curve). */
function decode(raw: Uint8Array): [bigint, bigint] | null {
  if (raw.length !== 32) return null;
  let y = 0n;
  for (let i = 31; i >= 0; i--) y = (y << 8n) | BigInt(raw[i]!);
  const sign = y >> 255n;
  y &= (1n << 255n) - 1n;
  if (y >= P) return null;
  const u = mod(y * y - 1n);
  const v = mod(D * y * y + 1n);
  let x = mod(u * pow(v, 3n) * pow(u * pow(v, 7n), (P - 5n) / 8n));
  const vx2 = mod(v * x * x);
  if (vx2 === mod(-u)) x = mod(x * SQRT_M1);
  else if (vx2 !== u) return null;
  if (x === 0n && sign === 1n) return null;
  if ((x & 1n) !== sign) x = P - x;
  return [x, y];
}

/** Doubling in projective coordinates for a = -1 (dbl-2008-bbjlp): no inversion. */
function double([x, y, z]: [bigint, bigint, bigint]): [bigint, bigint, bigint] {
  const b = mod((x + y) * (x + y));
  const c = mod(x * x);
  const d = mod(y * y);
  const e = mod(-c);
  const f = mod(e + d);
  const h = mod(z * z);
  const j = mod(f - 2n * h);
  return [mod((b - c - d) * j), mod(f * (e - d)), mod(f * j)];
}

/** True when `raw` is no usable Ed25519 public key: not a canonical point, or one of small order. */
export function isWeakEd25519Key(raw: Uint8Array): boolean {
  const affine = decode(raw);
  if (affine === null) return true;
  let point: [bigint, bigint, bigint] = [affine[0], affine[1], 1n];
  for (let i = 0; i < 3; i++) point = double(point);
  // [8]P is the identity (0 : Z : Z) exactly when P's order divides 8.
  return point[0] === 0n && point[1] === point[2];
}
