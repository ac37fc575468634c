// Resource patterns: `resource://...`, optionally ending in one `*` that matches any
// remainder. Matching is on the exact string; nothing is normalised.

import { isRequestResource, MAX_RESOURCE_LENGTH } from '../policy/formats.ts';
import { MAX_RESOURCE_PATTERN_LENGTH } from './limits.ts';

export const RESOURCE_SCHEME = 'resource://';

export function isResourcePattern(p: unknown, maxLength: number): p is string {
  if (typeof p !== 'string' || p.length > maxLength || !p.startsWith(RESOURCE_SCHEME)) return false;
  const star = p.indexOf('*');
  return star === -1 || star === p.length - 1;
}

/**
 * What issuance signs: a pattern some request could match. The permit's own grammar (verification)
 * only places the "*"; a pattern with an empty or dot segment, or an escape no request may hold
 * (formats.ts), would be signed and never match, so it is refused here with the policy's grammar.
 */
export function isIssuablePattern(pattern: string): boolean {
  if (!isResourcePattern(pattern, MAX_RESOURCE_PATTERN_LENGTH)) return false;
  if (!pattern.endsWith('*')) return isRequestResource(pattern);
  // A prefix may end at a "/" or inside a segment: judged as the shortest resource it starts, or as
  // itself when it is already as long as a resource may be.
  const prefix = withoutOpenEnd(pattern.slice(0, -1));
  return isRequestResource(prefix.length < MAX_RESOURCE_LENGTH ? `${prefix}x` : prefix);
}

/**
 * A prefix may end inside an escape (`%`, `%2`) or inside a UTF-8 sequence (`caf%C3` covers
 * `caf%C3%A9`): that open end is left out of the judgement, which the rest of the prefix still
 * gets. Only a well-formed start of a sequence counts as one (`%C0%AF` never begins a character).
 */
function withoutOpenEnd(prefix: string): string {
  const p = prefix.replace(/%[0-9A-F]?$/, '');
  const bytes: number[] = [];
  for (let at = p.length - 3; at >= 0 && p[at] === '%' && /^[0-9A-F]{2}$/.test(p.slice(at + 1, at + 3)); at -= 3) {
    bytes.unshift(parseInt(p.slice(at + 1, at + 3), 16));
    if (bytes[0]! < 0x80 || bytes[0]! >= 0xc0 || bytes.length === 4) break; // a byte that is not a continuation ends the sequence
  }
  const lead = bytes[0];
  if (lead === undefined || lead < 0xc2 || lead > 0xf4) return p;
  const needed = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : 2;
  const open = bytes.length < needed && bytes.slice(1).every((b) => b >= 0x80 && b < 0xc0);
  return open ? p.slice(0, p.length - 3 * bytes.length) : p;
}

/** True when `resource` is in the set named by `pattern`. */
export function patternMatches(pattern: string, resource: string): boolean {
  return pattern.endsWith('*') ? resource.startsWith(pattern.slice(0, -1)) : resource === pattern;
}

/**
 * True when every resource `child` names is also named by `parent`. For prefix sets this is
 * exact: P* ⊇ C* iff C starts with P; P* ⊇ c iff c starts with P; an exact parent covers only itself.
 */
export function patternCovers(parent: string, child: string): boolean {
  if (!parent.endsWith('*')) return child === parent;
  const prefix = parent.slice(0, -1);
  return (child.endsWith('*') ? child.slice(0, -1) : child).startsWith(prefix);
}

/** True when some pattern matches the resource. */
export function anyPatternMatches(patterns: readonly string[], resource: string): boolean {
  return patterns.some((p) => patternMatches(p, resource));
}
