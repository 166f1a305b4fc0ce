#!/usr/bin/env bash
# Installs the official MCP client SDKs the interop tests run against, into a cache directory:
#   $OPENHUMAN_INTEROP_DIR (default: target/interop under the repo root)
#     py2/          venv with mcp==$MCP_PY2 (the 2.x SDK: server/discover, 2026-07-28 era)
#     py1/          venv with mcp==$MCP_PY1 (the newest 1.x SDK: initialize handshake)
#     node/         package.json + package-lock.json copied from tests/interop/node, then `npm ci`
#     .stamp        the pins of the last successful install; when it matches, nothing is done
# Idempotent: a second run with the same pins returns at once.
# Needs: python3 (>= 3.10), node (>= 20) and npm, network access to PyPI and npm.
set -euo pipefail

MCP_PY2="2.3.0"
MCP_PY1="1.30.0"

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
DIR="${OPENHUMAN_INTEROP_DIR:-$ROOT/target/interop}"
PYTHON="${PYTHON:-python3}"

mkdir -p "$DIR"
DIR="$(cd "$DIR" && pwd)"

lock_sum() {
    # The lock file content is part of the key: changing a pin there reinstalls node_modules.
    if command -v sha256sum >/dev/null 2>&1; then
        sha256sum "$HERE/node/package-lock.json" | cut -d' ' -f1
    else
        shasum -a 256 "$HERE/node/package-lock.json" | cut -d' ' -f1
    fi
}

pyver="$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
nodever="$(node --version)"
KEY="mcp-py2=$MCP_PY2 mcp-py1=$MCP_PY1 python=$pyver node=$nodever lock=$(lock_sum)"

if [[ -f "$DIR/.stamp" && "$(cat "$DIR/.stamp")" == "$KEY" \
      && -x "$DIR/py2/bin/python" && -x "$DIR/py1/bin/python" \
      && -d "$DIR/node/node_modules/@modelcontextprotocol/sdk" ]]; then
    echo "interop setup: up to date ($DIR)" >&2
    exit 0
fi
rm -f "$DIR/.stamp"

make_venv() { # name version
    local venv="$DIR/$1" want="$2" have=""
    if [[ -x "$venv/bin/python" ]]; then
        have="$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("mcp"))' 2>/dev/null || true)"
    fi
    if [[ "$have" == "$want" ]]; then
        echo "interop setup: $1 has mcp $want" >&2
        return
    fi
    echo "interop setup: creating $1 with mcp==$want" >&2
    rm -rf "$venv"
    "$PYTHON" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "mcp==$want"
    have="$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("mcp"))')"
    if [[ "$have" != "$want" ]]; then
        echo "interop setup: $1 got mcp $have, wanted $want" >&2
        exit 1
    fi
}

make_venv py2 "$MCP_PY2"
make_venv py1 "$MCP_PY1"

echo "interop setup: npm ci (@modelcontextprotocol/sdk from package-lock.json)" >&2
mkdir -p "$DIR/node"
cp "$HERE/node/package.json" "$HERE/node/package-lock.json" "$DIR/node/"
(cd "$DIR/node" && npm ci --no-audit --no-fund --loglevel=error >&2)

printf '%s' "$KEY" >"$DIR/.stamp"
echo "interop setup: done ($DIR)" >&2
