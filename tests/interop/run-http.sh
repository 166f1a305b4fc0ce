#!/usr/bin/env bash
# Interop tests of openhumand-mcp's Streamable HTTP transport with the official MCP clients.
#
#   tests/interop/run-http.sh
#
# Installs the SDKs and mcp-remote (tests/interop/setup.sh, cached in $OPENHUMAN_INTEROP_DIR,
# default target/interop), then runs each client against `openhumand-mcp serve --http --port 0`
# from ${OPENHUMAN_BIN_DIR:-target/debug} (relative paths are taken from the repo root; build it
# first). Each client starts its own daemons in fresh temporary homes, one without auth and one
# with a bearer token, and stops them at the end:
#
#   py-mcp2-http  Python mcp 2.x: default auto mode (server/discover, then stateless 2026-07-28)
#                 and forced legacy (initialize, Mcp-Session-Id)
#   py-mcp1-http  Python mcp 1.x: ClientSession + initialize
#   ts-sdk-http   TypeScript SDK StreamableHTTPClientTransport, and mcp-remote bridging the SDK's
#                 stdio client to the HTTP port (--protocol legacy and --protocol auto)
#
# Prints each `ok - ...` / `not ok - ...` line, then a last line `N passed, M failed`; exits 1 if
# anything failed. Each client run is bounded by $OPENHUMAN_INTEROP_TIMEOUT seconds (default 600),
# each check inside it by its own timeout. OPENHUMAN_INTEROP_TRACE=DIR logs the HTTP exchanges of
# the SDK cases in DIR.
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
cd "$ROOT" || exit 2
export OPENHUMAN_INTEROP_DIR="${OPENHUMAN_INTEROP_DIR:-$ROOT/target/interop}"
BIN_DIR="${OPENHUMAN_BIN_DIR:-target/debug}"
BIN_DIR="$(cd "$BIN_DIR" 2>/dev/null && pwd || echo "$BIN_DIR")"
CLIENT_TIMEOUT="${OPENHUMAN_INTEROP_TIMEOUT:-600}"

passed=0
failed=0
RUN_TMP="$(mktemp -d "${TMPDIR:-/tmp}/openhuman-interop-http.XXXXXX")"

cleanup() {
    # A client killed by its timeout cannot stop its daemons: stop any daemon still answering
    # under one of this run's homes, then drop the scratch space.
    local home
    for home in "$RUN_TMP"/*/home*; do
        [[ -d "$home" ]] || continue
        if OPENHUMAN_HOME="$home" "$BIN_DIR/openhumand-mcp" status >/dev/null 2>&1; then
            OPENHUMAN_HOME="$home" "$BIN_DIR/openhumand-mcp" stop >/dev/null 2>&1 || true
        fi
    done
    rm -rf "$RUN_TMP"
}
trap cleanup EXIT

bounded() { # SECONDS CMD...: run CMD, killing it (and reporting 124) after SECONDS
    local secs="$1"
    shift
    if command -v timeout >/dev/null 2>&1; then
        timeout -k 10 "$secs" "$@"
    else
        python3 - "$secs" "$@" <<'PY'
import subprocess, sys
p = subprocess.Popen(sys.argv[2:])
try:
    sys.exit(p.wait(timeout=float(sys.argv[1])))
except subprocess.TimeoutExpired:
    p.kill()
    p.wait()
    sys.exit(124)
PY
    fi
}

# run_client NAME CMD...: streams the client's lines and tallies them.
run_client() {
    local name="$1"
    shift
    local out="$RUN_TMP/$name.out"
    echo "# running $name" >&2
    local t0
    t0=$(date +%s)
    bounded "$CLIENT_TIMEOUT" "$@" 2>"$RUN_TMP/$name.err" | tee "$out"
    local rc="${PIPESTATUS[0]}"
    echo "# $name took $(($(date +%s) - t0)) s" >&2
    local ok bad
    ok="$(grep -c '^ok - ' "$out")"
    bad="$(grep -c '^not ok - ' "$out")"
    passed=$((passed + ok))
    failed=$((failed + bad))
    if [[ "$rc" != 0 && "$bad" == 0 ]] || [[ "$rc" == 124 || "$rc" == 137 ]]; then
        local why="exited with status $rc"
        [[ "$rc" == 124 || "$rc" == 137 ]] && why="killed after ${CLIENT_TIMEOUT} s (hung)"
        echo "not ok - $name: $why"
        sed 's/^/#   /' "$RUN_TMP/$name.err" | tail -20
        failed=$((failed + 1))
    elif [[ -s "$RUN_TMP/$name.err" && "$bad" != 0 ]]; then
        sed 's/^/#   /' "$RUN_TMP/$name.err" | tail -20
    fi
}

started=$(date +%s)
if ! bounded "$CLIENT_TIMEOUT" "$HERE/setup.sh" 2>"$RUN_TMP/setup.err"; then
    echo "not ok - setup: tests/interop/setup.sh failed"
    sed 's/^/#   /' "$RUN_TMP/setup.err" | tail -30
    echo "0 passed, 1 failed"
    exit 1
fi
echo "# setup took $(($(date +%s) - started)) s" >&2

if [[ ! -x "$BIN_DIR/openhumand-mcp" ]]; then
    echo "not ok - binaries: openhumand-mcp not found in the bin dir; run \`cargo build\` first"
    echo "0 passed, 1 failed"
    exit 1
fi
# setup.sh installs mcp-remote from node/package-lock.json with the SDK.
if [[ ! -f "$OPENHUMAN_INTEROP_DIR/node/node_modules/mcp-remote/package.json" ]]; then
    echo "not ok - setup: mcp-remote is not installed in $OPENHUMAN_INTEROP_DIR/node (is it in node/package-lock.json?)"
    echo "0 passed, 1 failed"
    exit 1
fi

export TMPDIR="$RUN_TMP"
export OPENHUMAN_BIN_DIR="$BIN_DIR"
run_client py-mcp2-http "$OPENHUMAN_INTEROP_DIR/py2/bin/python" "$HERE/py_http_client.py" --bin-dir "$BIN_DIR"
run_client py-mcp1-http "$OPENHUMAN_INTEROP_DIR/py1/bin/python" "$HERE/py_http_client.py" --bin-dir "$BIN_DIR"
run_client ts-sdk-http node "$HERE/node/ts_http_client.mjs" --bin-dir "$BIN_DIR" --node-dir "$OPENHUMAN_INTEROP_DIR/node"

echo "# total $(($(date +%s) - started)) s" >&2
echo "$passed passed, $failed failed"
[[ "$failed" == 0 ]]
