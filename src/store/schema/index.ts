// The whole database as Kysely sees it: one interface per capability, merged here.
import type { CoreTables } from './core.ts';
import type { AuthorizeTables } from './authorize.ts';
import type { IdentityTables } from './identity.ts';
import type { AuditLogTables } from './auditlog.ts';

export interface Database extends CoreTables, AuthorizeTables, IdentityTables, AuditLogTables {}
