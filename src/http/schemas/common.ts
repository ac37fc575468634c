// Schemas shared by route groups. Objects are closed (additionalProperties: false) by default.
import { Type, type TSchema } from 'typebox';

export const ProblemSchema = Type.Object({
  type: Type.String(),
  title: Type.String(),
  status: Type.Integer(),
  code: Type.String({ description: 'Stable machine-readable error code' }),
  detail: Type.String(),
  errors: Type.Optional(Type.Array(Type.Object({
    pointer: Type.String({ description: 'JSON Pointer into the request part' }),
    code: Type.String(),
    message: Type.String(),
    in: Type.Optional(Type.String()),
  }))),
  request_id: Type.String(),
}, { additionalProperties: true, $id: 'Problem' });

/** Error responses every route may give; merged into each route's `response`. */
export function errorResponses(...statuses: number[]): Record<number, TSchema> {
  const out: Record<number, TSchema> = {};
  for (const s of [400, 401, 403, 404, 409, 413, 415, 422, 429, 500, 503, ...statuses]) out[s] = Type.Ref('Problem');
  return out;
}

export const ProjectParams = Type.Object({
  projectId: Type.String({ pattern: '^prj_[0-9a-z]{26}$', description: 'Project id' }),
});

export const MAX_SAFE_MINOR = Number.MAX_SAFE_INTEGER;
export const Money = Type.Object({
  minor: Type.Integer({ minimum: 0, maximum: MAX_SAFE_MINOR, description: 'Amount in minor units' }),
  currency: Type.String({ pattern: '^[A-Z]{3}$', description: 'ISO 4217 code' }),
}, { additionalProperties: false });

export const PageQuery = Type.Object({
  cursor: Type.Optional(Type.String({ maxLength: 200 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 50 })),
}, { additionalProperties: false });

export const Timestamp = Type.String({ format: 'date-time' });
