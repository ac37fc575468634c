// Public surface of the permit module (docs/permits.md).
export type {
  DidResolver,
  GavelConstraints,
  Money,
  PermitCheck,
  PermitClaims,
  PermitFailure,
  PermitHeader,
  SignFunction,
  VerifiedLink,
  VerifiedPermit,
  VerifyResult,
  WidenedDimension,
} from './types.ts';
export { PermitError } from './types.ts';
export { issuePermit } from './issue.ts';
export type { RootPermitInput } from './issue.ts';
export { delegatePermit } from './delegate.ts';
export type { DelegationInput } from './delegate.ts';
export { verifyPermit } from './verify.ts';
export type { VerifyContext } from './verify.ts';
export { verifyPermitSignatures } from './verify-signatures.ts';
export type { SignatureContext } from './verify-signatures.ts';
export { checkPermitTime } from './check-time.ts';
export { checkCoverage } from './coverage.ts';
export type { CoverageCheck, CoverageRequest, CoverageResult } from './coverage.ts';
export { liveLimits } from './live-limits.ts';
export type { LiveCounter, LiveLimits } from './live-limits.ts';
export { permitCommitment, presentedCommitment } from './commitment.ts';
export { permitIssuerId, permitKeyId } from './key-id.ts';
export { didKeyFromPublicKey, didKeyIsUsable, didKeyIsWellFormed, isDid, publicKeyFromDidKey } from './did.ts';
export { base58btcDecode, base58btcEncode } from './base58btc.ts';
export { signPermitClaims } from './compact.ts';
export { CHAIN_SEPARATOR, MAX_CHAIN_LINKS, MAX_PRESENTED_LENGTH, MAX_RESOURCE_PATTERN_LENGTH } from './limits.ts';
export { isAction } from './claims.ts';
export { isIssuablePattern, isResourcePattern } from './pattern.ts';
