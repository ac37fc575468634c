/** A member name as one reference token of a JSON Pointer (RFC 6901 §3: "~" as "~0", "/" as "~1"). */
export const escapePointer = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');

/** A non-empty JSON Pointer (RFC 6901): "/" and tokens in which "~" is only "~0" or "~1". */
export const isMemberPointer = (p: string): boolean => /^(\/([^~/]|~[01])*)+$/.test(p);

/**
 * The value `pointer` names inside `doc`, or undefined where nothing is: own members of objects,
 * and of arrays only a decimal index without leading zeros (RFC 6901 §4).
 */
export function valueAt(doc: unknown, pointer: string): unknown {
  let at = doc;
  for (const raw of pointer.split('/').slice(1)) {
    const token = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (Array.isArray(at)) {
      if (!/^(0|[1-9][0-9]*)$/.test(token)) return undefined;
      at = at[Number(token)];
    } else if (typeof at === 'object' && at !== null && Object.hasOwn(at, token)) {
      at = (at as Record<string, unknown>)[token];
    } else {
      return undefined;
    }
  }
  return at;
}
