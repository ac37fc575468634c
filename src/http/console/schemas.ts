// Shapes shared by the identity routes (console and machine).
import { Type } from 'typebox';
import { ROLES } from '../../domain/access/roles.ts';
import { MAX_NAME_LENGTH } from '../../domain/access/names.ts';
import { oneLineText } from '../schemas/common.ts';

export const RoleSchema = Type.Union(ROLES.map((r) => Type.Literal(r)), { description: 'A role of the project' });
export const RoleList = Type.Array(RoleSchema, { maxItems: 5, uniqueItems: true });
export const PrincipalId = Type.String({ pattern: '^prn_[0-9a-z]{26}$', description: 'Principal id' });
export const KeyId = Type.String({ pattern: '^key_[0-9a-z]{26}$', description: 'API key id' });
export const Name = Type.String({ minLength: 1, maxLength: MAX_NAME_LENGTH, description: 'Login name of a person (lower-cased), or display name of a service' });
/**
 * A label a person gives (an API key's name): free text shown in lists and audit events, so not
 * blank, and without control or format characters (a newline, or a bidi override that shows a
 * label's end before its start).
 */
export const Label = oneLineText(128, 'Free text');
/** Bounded well above the 256-character rule, so a huge password is refused before any hashing. */
export const Password = Type.String({ minLength: 1, maxLength: 1024 });

export const Member = Type.Object({
  principal_id: Type.String(), kind: Type.String(), name: Type.String(), roles: RoleList, member_since: Type.String(),
});
export const ApiKeyView = Type.Object({
  id: Type.String(), name: Type.String(), principal_id: Type.String(),
  roles: Type.Array(RoleSchema, { maxItems: 5, uniqueItems: true, description: 'The roles the key was minted with' }),
  effective_roles: Type.Array(RoleSchema, { maxItems: 5, uniqueItems: true, description: 'The roles the key carries now: those of its roles its holder still holds through a grant no newer than the key (a role revoked and granted again does not come back to it); none once the key is revoked or its holder is no longer a member' }),
  created_at: Type.String(),
  created_by: Type.String(), revoked_at: Type.Union([Type.String(), Type.Null()]), revoked_by: Type.Union([Type.String(), Type.Null()]),
});
export const SodDocumentSchema = Type.Object({
  exclusive_roles: Type.Array(Type.Array(RoleSchema, { minItems: 2, maxItems: 2 }), { maxItems: 10, description: 'Pairs of roles no single principal may hold together' }),
  four_eyes_policy_activation: Type.Boolean({ description: 'When true, the principal that saved a policy version may not activate it' }),
}, { additionalProperties: false });
