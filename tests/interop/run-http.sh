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
#   py-sets-*     both Python SDKs: a tool set per client ([clients.<name>]) over HTTP
#
# Prints each `ok - ...` / `not ok - ...` line, then a last line `N passed, M failed`; exits 1 if
# anything failed. Each client run is bounded by $OPENHUMAN_INTEROP_TIMEOUT seconds (default 600),
# each check inside it by its own timeout. OPENHUMAN_INTEROP_TRACE=DIR logs the HTTP exchanges of
# the SDK cases in DIR.
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=tests/interop/lib.sh
source "$HERE/lib.sh" || exit 2

# Each client starts several daemons and mcp-remote bridges: say how long each client took.
TIME_EACH_CLIENT=1
# The clients make a scratch directory each under the run's (TMPDIR points there below), with
# their daemons' homes in `home` and, for the daemon with a token, `home-bearer`.
interop_begin http 'home*'
interop_setup
require_bins openhumand-mcp
# setup.sh installs mcp-remote from node/package-lock.json with the SDK.
if [[ ! -f "$OPENHUMAN_INTEROP_DIR/node/node_modules/mcp-remote/package.json" ]]; then
    echo "not ok - setup: mcp-remote is not installed in $OPENHUMAN_INTEROP_DIR/node (is it in node/package-lock.json?)"
    end_early 1
fi

export TMPDIR="$RUN_TMP"
export OPENHUMAN_BIN_DIR="$BIN_DIR"
run_client py-mcp2-http "$OPENHUMAN_INTEROP_DIR/py2/bin/python" "$HERE/py_http_client.py" --bin-dir "$BIN_DIR"
run_client py-mcp1-http "$OPENHUMAN_INTEROP_DIR/py1/bin/python" "$HERE/py_http_client.py" --bin-dir "$BIN_DIR"
run_client py-sets-mcp2-http "$OPENHUMAN_INTEROP_DIR/py2/bin/python" "$HERE/py_client_sets.py" --bin-dir "$BIN_DIR" --transport http
run_client py-sets-mcp1-http "$OPENHUMAN_INTEROP_DIR/py1/bin/python" "$HERE/py_client_sets.py" --bin-dir "$BIN_DIR" --transport http
run_client ts-sdk-http node "$HERE/node/ts_http_client.mjs" --bin-dir "$BIN_DIR" --node-dir "$OPENHUMAN_INTEROP_DIR/node"

interop_finish
