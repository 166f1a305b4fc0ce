# Helpers shared by the interop drivers run.sh and run-http.sh. Not a script of its own: a driver
# sets HERE to its own directory and `set -uo pipefail`, then sources this file, which moves to the
# repo root and reads the settings both drivers honour (see their headers). A driver then calls, in
# order: interop_begin, interop_setup, require_bins, run_client once per client, and last
# interop_finish, whose status becomes the driver's exit status.

ROOT="$(cd "$HERE/../.." && pwd)"
cd "$ROOT" || exit 2
export OPENHUMAN_INTEROP_DIR="${OPENHUMAN_INTEROP_DIR:-$ROOT/target/interop}"
BIN_DIR="${OPENHUMAN_BIN_DIR:-target/debug}"
BIN_DIR="$(cd "$BIN_DIR" 2>/dev/null && pwd || echo "$BIN_DIR")"
CLIENT_TIMEOUT="${OPENHUMAN_INTEROP_TIMEOUT:-600}"

# The tally of `ok - ` and `not ok - ` lines over all clients.
passed=0
failed=0
# Set to 1 by a driver whose clients take long enough that their durations are worth a line each.
TIME_EACH_CLIENT=0

# interop_begin TAG HOMES: makes the run's scratch directory, openhuman-interop-TAG.XXXXXX under
# $TMPDIR, and removes it at exit. The clients keep their daemon homes in directories one level
# down whose names match the glob HOMES.
interop_begin() {
    RUN_TMP="$(mktemp -d "${TMPDIR:-/tmp}/openhuman-interop-$1.XXXXXX")"
    DAEMON_HOMES="$2"
    trap interop_cleanup EXIT
}

interop_cleanup() {
    # A client killed by its timeout cannot stop the daemons it started: stop any daemon still
    # answering under one of this run's homes, then drop the scratch space.
    local home
    # DAEMON_HOMES is a glob, so it stays unquoted.
    # shellcheck disable=SC2086
    for home in "$RUN_TMP"/*/$DAEMON_HOMES; do
        [[ -d "$home" ]] || continue
        if OPENHUMAN_HOME="$home" "$BIN_DIR/openhumand-mcp" status >/dev/null 2>&1; then
            OPENHUMAN_HOME="$home" "$BIN_DIR/openhumand-mcp" stop >/dev/null 2>&1 || true
        fi
    done
    rm -rf "$RUN_TMP"
}

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

# end_early N: ends a run that found N failures before any client could run.
end_early() {
    echo "0 passed, $1 failed"
    exit 1
}

# interop_setup: installs the SDKs (a no-op when the cache is current) and starts the run's clock.
interop_setup() {
    started=$(date +%s)
    if ! bounded "$CLIENT_TIMEOUT" "$HERE/setup.sh" 2>"$RUN_TMP/setup.err"; then
        echo "not ok - setup: tests/interop/setup.sh failed"
        sed 's/^/#   /' "$RUN_TMP/setup.err" | tail -30
        end_early 1
    fi
    echo "# setup took $(($(date +%s) - started)) s" >&2
}

# require_bins EXE...: reports each EXE missing from the bin dir and, if any is, ends the run.
require_bins() {
    local exe missing=0
    for exe in "$@"; do
        if [[ ! -x "$BIN_DIR/$exe" ]]; then
            echo "not ok - binaries: $exe not found in the bin dir; run \`cargo build\` first"
            missing=$((missing + 1))
        fi
    done
    [[ "$missing" == 0 ]] || end_early "$missing"
}

# run_client NAME CMD...: streams the client's lines and tallies them. A client that dies without
# saying why, or hangs, counts as one more failure, shown with the tail of its stderr.
run_client() {
    local name="$1"
    shift
    local out="$RUN_TMP/$name.out"
    echo "# running $name" >&2
    local t0
    t0=$(date +%s)
    bounded "$CLIENT_TIMEOUT" "$@" 2>"$RUN_TMP/$name.err" | tee "$out"
    local rc="${PIPESTATUS[0]}"
    if [[ "$TIME_EACH_CLIENT" == 1 ]]; then
        echo "# $name took $(($(date +%s) - t0)) s" >&2
    fi
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

# interop_finish: prints the totals; succeeds only when nothing failed.
interop_finish() {
    echo "# total $(($(date +%s) - started)) s" >&2
    echo "$passed passed, $failed failed"
    [[ "$failed" == 0 ]]
}
