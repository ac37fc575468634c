// "The same action" (docs/executions.md): SHA-256 over the RFC 8785 form of what the caller asks
// to be done. The permit is not part of it: a re-issued permit does not make a new action.
import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import type { Money } from '../../domain/permit/index.ts';

export interface ActionFacts {
  agent: string; action: string; resource: string; amount?: Money | undefined; intent?: string | undefined;
  merchant: string; operation: string; payload: unknown;
}

/** The call alone, as an obligation states it: RFC 8785 text of merchant, operation and payload (no nonce). */
export function executionCall(e: { merchant: string; operation: string; payload: unknown }): string {
  return canonicalize({ merchant: e.merchant, operation: e.operation, payload: e.payload }) ?? '';
}

export function actionFingerprint(f: ActionFacts): string {
  const canonical = canonicalize({
    agent: f.agent, action: f.action, resource: f.resource, amount: f.amount ?? null, intent: f.intent ?? null,
    merchant: f.merchant, operation: f.operation, payload: f.payload,
  }) ?? '';
  return createHash('sha256').update(canonical).digest('hex');
}
