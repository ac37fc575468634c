// Response serializers, one per distinct schema. Fastify compiles a serializer (fast-json-stringify,
// which generates and compiles JavaScript) for every status code of every route: 1,176 at start
// for 45 distinct schemas, nearly all of them the same problem+json refusals (session 15). Within
// one set of shared schemas a schema's JSON decides its serializer, so equal schemas share one.
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';

type Factory = ReturnType<typeof SerializerSelector>;

/** Fastify's default serializer factory (or `inner`), remembering each serializer by its schema's JSON. */
export function sharedSerializers(inner: Factory = SerializerSelector()): Factory {
  return (externalSchemas, options) => {
    const compile = inner(externalSchemas, options);
    const byJson = new Map<string, ReturnType<typeof compile>>();
    return (route) => {
      const key = JSON.stringify(route.schema);
      let serializer = byJson.get(key);
      if (!serializer) { serializer = compile(route); byJson.set(key, serializer); }
      return serializer;
    };
  };
}
