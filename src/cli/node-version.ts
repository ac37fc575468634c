// The Node.js the CLI needs (package.json "engines"). An older node runs the built JavaScript as far
// as opening the database, where the SQLite addon built for Node.js 24 kills it with a segmentation
// fault and not a word of why; so every command checks first. (scripts/require-node24.mjs says the
// same for the npm scripts, which run before anything is built and cannot import this.)
export const REQUIRED_NODE_MAJOR = 24;

/** Why this node cannot run gavel, or undefined when it can. */
export function nodeTooOld(version: string = process.versions.node): string | undefined {
  if (Number(version.split('.')[0]) >= REQUIRED_NODE_MAJOR) return undefined;
  return `gavel needs Node.js ${REQUIRED_NODE_MAJOR} or later, and this is v${version}: install it (in a checkout, \`. scripts/use-node24.sh\` puts it on this shell's PATH: README, Prerequisite), then run the command again`;
}
