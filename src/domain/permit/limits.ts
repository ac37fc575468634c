// Bounds applied before any parsing or crypto, so hostile input costs little.

/** Most links a presented chain may have (root + 7 delegations). */
export const MAX_CHAIN_LINKS = 8;
/** Largest presented string, in characters (all links and separators). */
export const MAX_PRESENTED_LENGTH = 16 * 1024;
export const MAX_ACTIONS = 64;
export const MAX_ACTION_LENGTH = 64;
export const MAX_RESOURCES = 64;
/** The spec bounds a requested resource at 512 characters; a pattern may add the `*`. */
export const MAX_RESOURCE_PATTERN_LENGTH = 513;
export const MAX_ID_LENGTH = 128;
/** Separates links in a presented chain: `root~child~...~leaf`. Not in the base64url alphabet. */
export const CHAIN_SEPARATOR = '~';
