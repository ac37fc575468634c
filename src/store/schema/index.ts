// The whole database as Kysely sees it: one interface per capability, merged here.
import type { CoreTables } from './core.ts';
import type { IdentityTables } from './identity.ts';
import type { PolicyTables } from './policy.ts';
import type { AuthorizeTables } from './authorize.ts';
import type { DecisionTables } from './decisions.ts';
import type { ApprovalTables } from './approvals.ts';
import type { ExecutionTables } from './executions.ts';
import type { AuditLogTables } from './auditlog.ts';
import type { SignerTables } from './signer.ts';

export interface Database extends CoreTables, IdentityTables, PolicyTables, AuthorizeTables, DecisionTables, ApprovalTables, ExecutionTables, AuditLogTables, SignerTables {}
