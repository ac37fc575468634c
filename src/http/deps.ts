// What route plugins receive: the adapters and configuration of one running service.
import type { Config } from '../config/config.ts';
import type { Clock } from '../lib/time.ts';
import type { Signer } from '../signer/signer.ts';
import type { Store } from '../store/store.ts';
import type { ReadTag } from '../store/read-epoch.ts';
import type { Role } from '../domain/access/roles.ts';
import type { GavelWriter } from '../services/writer/procedures.ts';
import type { Authorizer } from '../services/authorize/authorize.ts';
import type { MerchantRegistry } from '../merchants/config.ts';
import type { Executions } from '../services/executions/executions.ts';

export interface AppDeps {
  config: Config;
  store: Store;
  signer: Signer;
  clock: Clock;
  /** Runs the hot path's units of work (group commit; on SQLite, on the writer thread). */
  writer: GavelWriter;
  authorizer: Authorizer;
  /** Configured merchants (GAVEL_MERCHANTS_FILE), validated at start. */
  merchants: MerchantRegistry;
  executions: Executions;
}

/** Who is calling, established afresh on every request (roles are never cached). */
export interface AuthContext {
  kind: 'api_key' | 'session';
  projectId: string;
  principalId: string;
  roles: ReadonlySet<Role>;
  keyId?: string;
  sessionId?: string;
  /** The audit actor: the key for machine calls, the principal for console calls. */
  actor: string;
  /**
   * API keys: the SQLite read epoch this context was validated at, or CHECKED_AT_COMMIT for a
   * PostgreSQL context taken from the cache unvalidated (store/read-epoch.ts).
   */
  epoch?: ReadTag;
}

declare module 'fastify' {
  interface FastifyInstance {
    gavel: AppDeps;
    /** Set when a stop begins its drain (GAVEL_SHUTDOWN_DRAIN_MS): /readyz answers 503 from then on. */
    draining: boolean;
  }
  interface FastifyRequest {
    auth: AuthContext | null;
    /**
     * True when `auth` came from the API key cache unchecked (cachedApiKeyContext): the decision
     * checks it at its commit, and any other answer must check it afresh first.
     */
    authFromCache: boolean;
  }
}
