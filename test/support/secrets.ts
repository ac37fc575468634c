// Looking for credentials in what the service printed: each secret as text, as base64 (and
// base64url), and as the byte list a serialized Buffer shows.

export const secretForms = (secret: string): string[] => {
  const bytes = Buffer.from(secret);
  return [secret, bytes.toString('base64'), bytes.toString('base64url'), [...bytes].join(',')];
};

/** Where each secret (named by what it is) appears in `texts`: the first 300 characters of each text that holds it. */
export function leaksIn(secrets: Record<string, string>, texts: readonly string[]): string[] {
  const leaks: string[] = [];
  for (const [what, secret] of Object.entries(secrets)) {
    for (const form of secretForms(secret)) for (const text of texts) if (text.includes(form)) leaks.push(`${what}: ${text.slice(0, 300)}`);
  }
  return leaks;
}
