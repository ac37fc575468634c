// Every value a Cookie header gives one name, split as the cookie plugin splits it (pairs at ';',
// the name before the first '=', spaces and tabs trimmed). The plugin keeps only the first of a
// repeated name; the console needs to know there was a repeat: a browser sends the cookie with the
// longest Path first, and over plain HTTP any page on the same host, whatever its port, may set one
// (cookies do not isolate ports), so the first of two session cookies may be a planted one. Pure.

/** The values of cookie `name` in `header`, in the order sent (percent-decoded as the plugin decodes them). */
export function cookieValues(header: string | undefined, name: string): string[] {
  if (!header || !header.includes(name)) return [];
  const values: string[] = [];
  for (const pair of header.split(';')) {
    const eq = pair.indexOf('=');
    if (eq === -1 || trim(pair.slice(0, eq)) !== name) continue;
    values.push(decode(trim(pair.slice(eq + 1))));
  }
  return values;
}

/**
 * Spaces and tabs cut from both ends by a scan: /[ \t]+$/ retries from every blank of a run that
 * does not end the text, quadratic in a Cookie header read before any session is checked.
 */
function trim(s: string): string {
  let start = 0;
  let end = s.length;
  while (start < end && isBlank(s.charCodeAt(start))) start++;
  while (end > start && isBlank(s.charCodeAt(end - 1))) end--;
  return s.slice(start, end);
}

const isBlank = (c: number): boolean => c === 0x20 || c === 0x09;

function decode(value: string): string {
  if (!value.includes('%')) return value;
  try { return decodeURIComponent(value); } catch { return value; }
}
