// The whole database as Kysely sees it: one interface per capability, merged here.
import type { CoreTables } from './core.ts';

export interface Database extends CoreTables {}
