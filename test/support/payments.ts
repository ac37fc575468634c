// The executions tests' common start: a service that calls one test merchant, the ALLOW_PAYMENTS
// policy active, an API key, and an agent holding a root permit for `grant`.
import type { GavelConstraints } from '../../src/domain/permit/index.ts';
import { activatePolicy, ALLOW_PAYMENTS, issue, newAgent, type Agent } from './authorize.ts';
import type { Backend } from './backends.ts';
import { merchantsFile, startMerchant, type TestMerchant } from './merchant.ts';
import { startService, type TestService } from './service.ts';

export interface Payments {
  svc: TestService; merchant: TestMerchant; key: { authorization: string }; agent: Agent; permit: string;
  /** Stops the service, then closes the merchant even when stopping threw (answers not in /openapi.json): left listening, it kept the test process alive after a failure. */
  stop(): Promise<void>;
}

/** `operations`: more operations of `shop` (merchantsFile's `extra`); `timeoutMs`: merchantsFile's (roomy unless given). */
export async function startPayments(backend: Backend, grant: Omit<GavelConstraints, 'parent'>, options: { slowMs?: number; timeoutMs?: number; operations?: Record<string, unknown> } = {}): Promise<Payments> {
  const merchant = await startMerchant(options.slowMs === undefined ? {} : { slowMs: options.slowMs });
  const svc = await startService(backend, { merchantsFile: merchantsFile(merchant.url, options.timeoutMs, options.operations) }).catch(async (e: unknown) => { await merchant.close(); throw e; });
  const stop = () => stopBoth(svc, merchant);
  try {
    const key = await svc.keyHeader([]);
    await activatePolicy(svc, ALLOW_PAYMENTS);
    const agent = newAgent();
    const permit = (await issue(svc, agent.did, grant)).jws;
    return { svc, merchant, key, agent, permit, stop };
  } catch (e) {
    // A set-up step that fails stops what was started (its own failure said instead).
    await stop().catch(() => {});
    throw e;
  }
}

/** `svc.stop()`, and the merchant closed whatever it threw. */
export async function stopBoth(svc: TestService, merchant: TestMerchant): Promise<void> {
  try { await svc.stop(); } finally { await merchant.close(); }
}
