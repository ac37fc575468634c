// Whether an authorize request is exactly the action an obligation states: same agent, action,
// resource, amount (minor units and currency) and intent. A different amount is not covered,
// larger or smaller: the approver approved these bytes, not a range.
import type { ObligationFacts } from './statement.ts';

export interface RequestFacts {
  agent: string;
  action: string;
  resource: string;
  amount?: { minor: number; currency: string } | undefined;
  intent?: string | undefined;
}

/** null when covered; else the first field that differs. */
export function uncoveredField(o: Pick<ObligationFacts, 'agent' | 'action' | 'resource' | 'amount' | 'intent'>, r: RequestFacts): string | null {
  if (o.agent !== r.agent) return 'agent';
  if (o.action !== r.action) return 'action';
  if (o.resource !== r.resource) return 'resource';
  const a = o.amount;
  const b = r.amount;
  if ((a === null) !== (b === undefined)) return 'amount';
  if (a && b && (a.minor !== b.minor || a.currency !== b.currency)) return 'amount';
  if ((o.intent ?? null) !== (r.intent ?? null)) return 'intent';
  return null;
}
