#!/usr/bin/env bash
# Installs the official MCP client SDKs the interop tests run against, into a cache directory:
#   $OPENHUMAN_INTEROP_DIR (default: target/interop under the repo root)
#     py2/          venv with mcp==$MCP_PY2 (the 2.x SDK: server/discover, 2026-07-28 era)
#     py1/          venv with mcp==$MCP_PY1 (the newest 1.x SDK: initialize handshake)
#                   (their dependencies pinned by python/mcp{2,1}.constraints.txt)
#     node/         package.json + package-lock.json copied from tests/interop/node, then `npm ci`
#     .stamp        the pins of the last successful install; when it matches, nothing is done
# Idempotent: a second run with the same pins returns at once.
# Needs: python3 (>= 3.10; or $PYTHON), node (>= 20) and npm, network access to PyPI and npm.
set -euo pipefail

MCP_PY2="2.3.0"
MCP_PY1="1.30.0"

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
DIR="${OPENHUMAN_INTEROP_DIR:-$ROOT/target/interop}"
PYTHON="${PYTHON:-python3}"

mkdir -p "$DIR"
DIR="$(cd "$DIR" && pwd)"

# Tests that need the clients run this in parallel: one installs, the others wait for it and
# then find the stamp.
if command -v flock >/dev/null 2>&1; then
    exec 9>"$DIR/.lock"
    flock 9
fi

for tool in "$PYTHON" node npm; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "interop setup: \`$tool\` not found on PATH" >&2
        exit 1
    fi
done

sum_of() { # FILE: its sha256; the lock files' contents are part of the stamp key
    if command -v sha256sum >/dev/null 2>&1; then
        sha256sum "$1" | cut -d' ' -f1
    else
        shasum -a 256 "$1" | cut -d' ' -f1
    fi
}

pyver="$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
nodever="$(node --version)"
KEY="mcp-py2=$MCP_PY2 mcp-py1=$MCP_PY1 python=$pyver node=$nodever"
KEY="$KEY py2-constraints=$(sum_of "$HERE/python/mcp2.constraints.txt")"
KEY="$KEY py1-constraints=$(sum_of "$HERE/python/mcp1.constraints.txt")"
KEY="$KEY npm-lock=$(sum_of "$HERE/node/package-lock.json")"

if [[ -f "$DIR/.stamp" && "$(cat "$DIR/.stamp")" == "$KEY" \
      && -x "$DIR/py2/bin/python" && -x "$DIR/py1/bin/python" \
      && -d "$DIR/node/node_modules/@modelcontextprotocol/sdk" ]]; then
    echo "interop setup: up to date ($DIR)" >&2
    exit 0
fi
rm -f "$DIR/.stamp"

make_venv() { # name version constraints
    local venv="$DIR/$1" want="$2" constraints="$3" have
    local key="$want $(sum_of "$constraints") $pyver"
    if [[ -x "$venv/bin/python" && -f "$venv/.interop-key" && "$(cat "$venv/.interop-key")" == "$key" ]]; then
        echo "interop setup: $1 has mcp $want" >&2
        return
    fi
    echo "interop setup: creating $1 with mcp==$want" >&2
    rm -rf "$venv"
    "$PYTHON" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -c "$constraints" "mcp==$want"
    have="$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("mcp"))')"
    if [[ "$have" != "$want" ]]; then
        echo "interop setup: $1 got mcp $have, wanted $want" >&2
        exit 1
    fi
    printf '%s' "$key" >"$venv/.interop-key"
}

make_venv py2 "$MCP_PY2" "$HERE/python/mcp2.constraints.txt"
make_venv py1 "$MCP_PY1" "$HERE/python/mcp1.constraints.txt"

if [[ -d "$DIR/node/node_modules/@modelcontextprotocol/sdk" ]] \
    && cmp -s "$HERE/node/package-lock.json" "$DIR/node/package-lock.json" \
    && cmp -s "$HERE/node/package.json" "$DIR/node/package.json"; then
    echo "interop setup: node_modules matches package-lock.json" >&2
else
    echo "interop setup: npm ci (@modelcontextprotocol/sdk from package-lock.json)" >&2
    mkdir -p "$DIR/node"
    rm -f "$DIR/node/package-lock.json"
    cp "$HERE/node/package.json" "$HERE/node/package-lock.json" "$DIR/node/"
    (cd "$DIR/node" && npm ci --no-audit --no-fund --loglevel=error >&2)
fi

printf '%s' "$KEY" >"$DIR/.stamp"
echo "interop setup: done ($DIR)" >&2
