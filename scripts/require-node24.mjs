// Plain JavaScript on purpose: it runs before scripts/build.ts and scripts/test.ts, which an older
// node cannot load at all (it fails with ERR_UNKNOWN_FILE_EXTENSION, naming no cause). Exits 1 with
// one line saying what to do when this node is older than the Node.js 24 the README requires.
const major = Number(process.versions.node.split('.')[0]);
if (!(major >= 24)) {
  process.stderr.write(`gavel needs Node.js 24 or later, and this is ${process.version}: run \`. scripts/use-node24.sh\` in this shell first (README, Prerequisite), then run the command again\n`);
  process.exit(1);
}
