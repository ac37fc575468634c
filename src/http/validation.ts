// Request validation. Bodies are JSON and must carry the right types (no coercion: "100" is not
// 100, which matters for money). Query strings and path parameters are text by nature, so their
// declared integers and booleans are converted before checking. Every error is reported at once.
import { Ajv, type Options } from 'ajv';
import addFormats from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';

const common: Options = { allErrors: true, removeAdditional: false, useDefaults: true, strict: false };

function make(coerceTypes: boolean): Ajv {
  const ajv = new Ajv({ ...common, coerceTypes });
  (addFormats as unknown as (a: Ajv) => void)(ajv);
  return ajv;
}

const strictBodies = make(false);
const textParts = make(true);

export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) =>
  (httpPart === 'body' ? strictBodies : textParts).compile(schema as object) as never;
