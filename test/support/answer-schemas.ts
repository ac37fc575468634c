// The response schemas of an OpenAPI document, compiled with Ajv 2020. Fastify serializes with them
// but never checks pattern, format, enum, required or nullability: only validating real answers
// shows a document that lies. One Ajv per distinct document and one validator per operation, status
// and media type, for the whole process (a test file starts many services, whose documents agree).
import { createHash } from 'node:crypto';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

export interface AnswerSchemas {
  /**
   * How `body` departs from the schema of `method path`'s `status` answer in media type `type` (Ajv's
   * words, or what the document lacks), undefined when it validates. `path` is the document's ({id}).
   */
  mismatch(method: string, path: string, status: number, type: string, body: unknown): string | undefined;
}

const byContent = new Map<string, AnswerSchemas>();
const byDocument = new WeakMap<object, AnswerSchemas>();

/** The compiled response schemas of `doc` (an OpenAPI 3.1 document, as /openapi.json serves it). */
export function answerSchemas(doc: object): AnswerSchemas {
  const known = byDocument.get(doc);
  if (known) return known;
  const json = JSON.stringify(doc);
  const digest = createHash('sha256').update(json).digest('hex');
  let schemas = byContent.get(digest);
  if (!schemas) {
    const plain = JSON.parse(json) as { components: object; paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, { schema: object }> }> }>> };
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    (addFormats as unknown as (a: Ajv2020) => void)(ajv);
    // Only the components are referred to; each response schema is compiled once for all the
    // operations that share it (most problems are the one $ref to Problem): resolving a pointer into
    // the whole document compiled each anew, some 13 ms apiece.
    ajv.addSchema({ $id: 'openapi.json', components: plain.components });
    const byText = new Map<string, ValidateFunction>();
    const compiled = new Map<string, ValidateFunction | string>();
    const validator = (method: string, path: string, status: number, type: string): ValidateFunction | string => {
      const key = `${method} ${path} ${status} ${type}`;
      let v = compiled.get(key);
      if (v === undefined) {
        const response = plain.paths[path]?.[method.toLowerCase()]?.responses[String(status)];
        const schema = response?.content?.[type]?.schema;
        const text = schema && JSON.stringify(schema).replaceAll('"$ref":"#/', '"$ref":"openapi.json#/');
        v = !response ? `declares no ${status}` : !text ? `${status} declares no ${type}` : byText.get(text) ?? ajv.compile(JSON.parse(text) as object);
        if (text && typeof v !== 'string') byText.set(text, v);
        compiled.set(key, v);
      }
      return v;
    };
    schemas = {
      mismatch(method, path, status, type, body) {
        const v = validator(method, path, status, type);
        if (typeof v === 'string') return v;
        return v(body) ? undefined : ajv.errorsText(v.errors);
      },
    };
    byContent.set(digest, schemas);
  }
  byDocument.set(doc, schemas);
  return schemas;
}
