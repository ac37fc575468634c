// Principal names: people log in with them, so they are normalized (trimmed, lower-cased) and
// bounded; services get a display name under the same bounds. Pure.
export const MAX_NAME_LENGTH = 128;
const NAME_RE = /^[a-z0-9][a-z0-9._@+-]*$/;

export const normalizeName = (name: string): string => name.trim().toLowerCase();

export function nameProblem(name: string): { code: string; message: string } | null {
  if (name.length === 0) return { code: 'too_short', message: 'must not be empty' };
  if (name.length > MAX_NAME_LENGTH) return { code: 'too_long', message: `must have at most ${MAX_NAME_LENGTH} characters` };
  if (!NAME_RE.test(name)) return { code: 'bad_format', message: 'may use a-z, 0-9 and . _ @ + - and must start with a letter or digit' };
  return null;
}
