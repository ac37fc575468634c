// Issuing a root permit: the project's permit key signs, through the Signer port.
import type { Signer } from '../../signer/signer.ts';
import { signPermitClaims } from './compact.ts';
import { permitIssuerId, permitKeyId } from './key-id.ts';
import type { GavelConstraints } from './types.ts';

/** What the issuing service decides; `jti` and times come from the caller (no clock, no randomness here). */
export interface RootPermitInput {
  /** Project id (becomes `aud`; `iss` is `gavel:project:<aud>`). */
  aud: string;
  /** Agent DID. */
  sub: string;
  jti: string;
  /** Unix seconds. */
  iat: number;
  /** Defaults to `iat`. */
  nbf?: number;
  exp: number;
  gavel: Omit<GavelConstraints, 'parent'>;
}

/** Signs a root permit; returns its compact JWS. Throws PermitError (code `claims`) on bad input. */
export async function issuePermit(signer: Signer, keyName: string, input: RootPermitInput): Promise<string> {
  const kid = permitKeyId(await signer.publicKey(keyName));
  return signPermitClaims(
    {
      iss: permitIssuerId(input.aud),
      sub: input.sub,
      aud: input.aud,
      jti: input.jti,
      iat: input.iat,
      nbf: input.nbf ?? input.iat,
      exp: input.exp,
      gavel: { ...input.gavel },
    },
    kid,
    (message) => signer.sign(keyName, message),
  );
}
