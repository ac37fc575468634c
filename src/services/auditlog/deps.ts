// What the audit-log routes and services need from one running service.
import type { AppDeps } from '../../http/deps.ts';
import type { VerifyDeps } from './verify.ts';

export function auditLogDeps(deps: AppDeps): VerifyDeps {
  const { config } = deps;
  return {
    store: deps.store, signer: deps.signer, witnessUrl: config.witnessUrl, witnessVkey: config.witnessVkey,
    retryAfterSeconds: Math.max(1, Math.ceil((config.checkpointIntervalMs + config.auditTickMs) / 1000)),
  };
}
