#!/usr/bin/env bash
# Interop tests of openhuman-mcp with the official MCP client SDKs.
#
#   tests/interop/run.sh
#
# Installs the SDKs (tests/interop/setup.sh, cached in $OPENHUMAN_INTEROP_DIR, default
# target/interop), then runs every client against the binaries in ${OPENHUMAN_BIN_DIR:-target/debug}
# (relative paths are taken from the repo root; build them first). Prints each `ok - ...` /
# `not ok - ...` line, then a last line `N passed, M failed`; exits 1 if anything failed.
# Each client run is bounded by $OPENHUMAN_INTEROP_TIMEOUT seconds (default 600), each check inside
# it by its own timeout. OPENHUMAN_INTEROP_TRACE=DIR logs every JSON-RPC line per test case in DIR.
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
RUN_TMP="$(mktemp -d "${TMPDIR:-/tmp}/openhuman-interop-run.XXXXXX")"

cleanup() {
    # A client killed by its timeout cannot stop the daemon its shim autostarted: stop any daemon
    # still running under one of this run's homes, then drop the scratch space.
    local home
    for home in "$RUN_TMP"/*/home; do
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
        python3 - "$secs" "$@" <<'EOF'
import subprocess, sys
p = subprocess.Popen(sys.argv[2:])
try:
    sys.exit(p.wait(timeout=float(sys.argv[1])))
except subprocess.TimeoutExpired:
    p.kill()
    p.wait()
    sys.exit(124)
EOF
    fi
}

# run_client NAME CMD...: streams the client's lines and tallies them.
run_client() {
    local name="$1"
    shift
    local out="$RUN_TMP/$name.out"
    echo "# running $name" >&2
    bounded "$CLIENT_TIMEOUT" "$@" 2>"$RUN_TMP/$name.err" | tee "$out"
    local rc="${PIPESTATUS[0]}"
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

missing=0
for exe in openhuman-mcp-shim openhumand-mcp; do
    if [[ ! -x "$BIN_DIR/$exe" ]]; then
        echo "not ok - binaries: $exe not found in the bin dir; run \`cargo build\` first"
        missing=$((missing + 1))
    fi
done
if [[ "$missing" != 0 ]]; then
    echo "0 passed, $missing failed"
    exit 1
fi

export TMPDIR="$RUN_TMP"
export OPENHUMAN_BIN_DIR="$BIN_DIR"
run_client py-mcp2 "$OPENHUMAN_INTEROP_DIR/py2/bin/python" "$HERE/py_client.py" --bin-dir "$BIN_DIR"
# Subagent runs against a fake LLM the script starts on loopback (2.x SDK, through the shim).
run_client py-agents "$OPENHUMAN_INTEROP_DIR/py2/bin/python" "$HERE/py_agents.py" --bin-dir "$BIN_DIR"
run_client py-mcp1 "$OPENHUMAN_INTEROP_DIR/py1/bin/python" "$HERE/py_client.py" --bin-dir "$BIN_DIR"
run_client ts-sdk node "$HERE/node/ts_client.mjs" --bin-dir "$BIN_DIR" --node-dir "$OPENHUMAN_INTEROP_DIR/node"

echo "# total $(($(date +%s) - started)) s" >&2
echo "$passed passed, $failed failed"
[[ "$failed" == 0 ]]
