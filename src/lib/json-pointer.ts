/** A member name as one reference token of a JSON Pointer (RFC 6901 §3: "~" as "~0", "/" as "~1"). */
export const escapePointer = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');
