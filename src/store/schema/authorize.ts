// Agents, permits and their live counters: what the authorize decision reads and spends.
export interface AgentsTable {
  project_id: string;
  did: string;
  name: string | null;
  created_at: string;
  created_by: string;
  frozen_at: string | null;
  frozen_by: string | null;
  frozen_reason: string | null;
  /** Set by a release, cleared by the next freeze: since when, and by whom, the agent is not frozen. */
  released_at: string | null;
  released_by: string | null;
  /** Set when a person registers the agent (console); null for an agent only seen through a permit, a freeze or a decision. */
  registered_at: string | null;
  registered_by: string | null;
}

export interface PermitsTable {
  commitment: string;
  project_id: string;
  agent: string;
  /** The compact JWS as issued (root permits; delegated links are presented by agents). */
  jws: string | null;
  /** Commitment of the parent, for delegated links the service has seen. */
  parent: string | null;
  /** JSON of the claims, for listing. */
  claims: string;
  issued_by: string;
  created_at: string;
  expires_at: string;
  revoked_at: string | null;
  revoked_by: string | null;
}

/** Live spend of one permit link: cumulative amount and use count, spent atomically with decisions. */
export interface PermitUsageTable {
  commitment: string;
  project_id: string;
  spent_minor: number;
  currency: string | null;
  uses: number;
}

export interface AuthorizeTables {
  agents: AgentsTable;
  permits: PermitsTable;
  permit_usage: PermitUsageTable;
}
