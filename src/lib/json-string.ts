// A string as JSON text, exactly as JSON.stringify writes it, without calling into JSON.stringify
// when nothing needs escaping: a regular-expression test costs a fraction of that call, and the
// hot path quotes a dozen ids, DIDs and codes per decision (session 14).

/** What JSON.stringify escapes (quote, backslash, controls) or must look at (surrogates, lone ones escaped). */
const NEEDS_ESCAPE_OR_CHECK = /["\\\u0000-\u001f\ud800-\udfff]/;

/** True if the string is its own JSON text between two quotes. */
export const isPlainJsonString = (s: string): boolean => !NEEDS_ESCAPE_OR_CHECK.test(s);

/** JSON.stringify(s) for a string. */
export const jsonString = (s: string): string => (NEEDS_ESCAPE_OR_CHECK.test(s) ? JSON.stringify(s) : `"${s}"`);
