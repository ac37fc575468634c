// Resource patterns: `resource://...`, optionally ending in one `*` that matches any
// remainder. Matching is on the exact string; nothing is normalised.

import { isRequestPattern, RESOURCE_SCHEME } from '../policy/formats.ts';
import { MAX_RESOURCE_PATTERN_LENGTH } from './limits.ts';

export { RESOURCE_SCHEME };

export function isResourcePattern(p: unknown, maxLength: number): p is string {
  if (typeof p !== 'string' || p.length > maxLength || !p.startsWith(RESOURCE_SCHEME)) return false;
  const star = p.indexOf('*');
  return star === -1 || star === p.length - 1;
}

/**
 * What issuance signs: a pattern some request could match. The permit's own grammar (verification)
 * only places the "*"; a pattern with an empty or dot segment, or a spelling no request may use
 * (formats.ts, isRequestPattern), would be signed and never match, so it is refused here.
 */
export function isIssuablePattern(pattern: string): boolean {
  return isResourcePattern(pattern, MAX_RESOURCE_PATTERN_LENGTH) && isRequestPattern(pattern);
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
