// Shapes of a Gavel permit. Claim names follow JWT (RFC 7519) where one exists; the
// Gavel-specific constraints live under the single private claim `gavel`.

/** Money in minor units (DESIGN.md "Wire conventions"): integers only, ISO 4217 code. */
export interface Money {
  minor: number;
  currency: string;
}

/** The constraints a permit grants; a delegated link may only narrow them. */
export interface GavelConstraints {
  /** Exact action names, or "*" for any action. */
  actions: string[];
  /** `resource://...` patterns; a trailing `*` matches any remainder (including none). */
  resources: string[];
  /** Largest amount one request may carry. */
  max_per_request?: Money;
  /** Cumulative amount spendable through this permit (checked live by the service). */
  budget?: Money;
  /** How many requests this permit may authorize in total (checked live by the service). */
  max_uses?: number;
  /** Commitment (SHA-256 hex) of the parent permit; present exactly on delegated links. */
  parent?: string;
}

export interface PermitClaims {
  /** Root: `gavel:project:<projectId>`. Delegated link: the delegating agent's DID. */
  iss: string;
  /** The agent DID the permit is granted to. */
  sub: string;
  /** The project id. */
  aud: string;
  jti: string;
  /** Unix seconds. */
  iat: number;
  nbf: number;
  exp: number;
  gavel: GavelConstraints;
}

export interface PermitHeader {
  alg: 'EdDSA';
  typ: 'gavel-permit+jwt';
  /** Root: RFC 7638 thumbprint of the project permit key. Delegated: the issuer's DID URL. */
  kid: string;
}

/** One verified link of a presented chain. */
export interface VerifiedLink {
  commitment: string;
  claims: PermitClaims;
}

/** What a successful verification yields; everything the service needs to decide and spend. */
export interface VerifiedPermit {
  /** Commitment of the leaf (the permit the agent acts under). */
  commitment: string;
  /** Commitments root..leaf; revoking any of them revokes this permit. */
  chain: string[];
  /** Links after the root (root alone = 0). */
  delegation_depth: number;
  /** Leaf subject: the agent acting. */
  agent: string;
  project_id: string;
  /** The leaf's claims: the effective grant (every ancestor is at least as wide). */
  claims: PermitClaims;
  links: VerifiedLink[];
  /** Effective validity window, Unix seconds: nbf <= now < exp. */
  not_before: number;
  expires_at: number;
}

/** Stable codes naming the check that failed (`check` on a failure). */
export type PermitCheck =
  | 'malformed'
  | 'too_large'
  | 'chain_too_long'
  | 'algorithm'
  | 'header'
  | 'claims'
  | 'issuer'
  | 'audience'
  | 'subject_mismatch'
  | 'did_unresolvable'
  | 'signature'
  | 'chain_broken'
  | 'delegation_widened'
  | 'not_yet_valid'
  | 'expired'
  | 'time_invalid'
  | 'verification_error';

/** Which dimension a widened delegation widened. */
export type WidenedDimension =
  | 'actions'
  | 'resources'
  | 'max_per_request'
  | 'budget'
  | 'max_uses'
  | 'nbf'
  | 'exp';

export interface PermitFailure {
  ok: false;
  check: PermitCheck;
  /** Human sentence; never carries key material. */
  detail: string;
  /** Index of the offending link (0 = root) when one link is to blame. */
  link?: number;
  /** Set when check is `delegation_widened`. */
  dimension?: WidenedDimension;
}

export type VerifyResult = { ok: true; permit: VerifiedPermit } | PermitFailure;

/** Resolves a non-did:key DID to its raw Ed25519 public key, or null when it cannot. */
export type DidResolver = (did: string) => Promise<Uint8Array | null>;

/** Signs the JWS signing input with an agent's private key; returns the raw 64-byte signature. */
export type SignFunction = (message: Uint8Array) => Promise<Uint8Array>;

/** Thrown by issuance and delegation when the caller asks for a permit Gavel would refuse. */
export class PermitError extends Error {
  readonly code: PermitCheck;
  constructor(code: PermitCheck, message: string) {
    super(message);
    this.name = 'PermitError';
    this.code = code;
  }
}

/**
 * Text taken from a presented permit (a member name, a pointer to one), as a failure's detail may
 * show it: at most 40 code points (a cut never splits a surrogate pair), with control, format and
 * lone surrogate characters escaped. Details reach the caller and the decision's audit event, which
 * holds well-formed strings only (domain/decision/event.ts), and a permit need not be signed to be
 * read this far: its own text is never echoed unbounded, nor as a string no event can hold.
 */
export function shownName(name: string): string {
  const points = Array.from(name);
  const cut = points.length > 40 ? `${points.slice(0, 40).join('')}…` : name;
  return cut.replace(/[\p{Cc}\p{Cf}\p{Cs}]/gu, (c) => {
    const point = c.codePointAt(0)!;
    return point > 0xffff ? `\\u{${point.toString(16)}}` : `\\u${point.toString(16).padStart(4, '0')}`;
  });
}

export function fail(check: PermitCheck, detail: string, extra?: { link?: number; dimension?: WidenedDimension }): PermitFailure {
  return { ok: false, check, detail, ...extra };
}
