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
# shellcheck source=tests/interop/lib.sh
source "$HERE/lib.sh" || exit 2

# The clients make a scratch directory per case under the run's (TMPDIR points there below), with
# the daemon's home in `home`.
interop_begin run home
interop_setup
require_bins openhuman-mcp-shim openhumand-mcp

export TMPDIR="$RUN_TMP"
export OPENHUMAN_BIN_DIR="$BIN_DIR"
run_client py-mcp2 "$OPENHUMAN_INTEROP_DIR/py2/bin/python" "$HERE/py_client.py" --bin-dir "$BIN_DIR"
# Subagent runs against a fake LLM the script starts on loopback (2.x SDK, through the shim).
run_client py-agents "$OPENHUMAN_INTEROP_DIR/py2/bin/python" "$HERE/py_agents.py" --bin-dir "$BIN_DIR"
run_client py-mcp1 "$OPENHUMAN_INTEROP_DIR/py1/bin/python" "$HERE/py_client.py" --bin-dir "$BIN_DIR"
# A tool set per client ([clients.<name>]): three named clients through the shim, both SDKs.
run_client py-sets-mcp2 "$OPENHUMAN_INTEROP_DIR/py2/bin/python" "$HERE/py_client_sets.py" --bin-dir "$BIN_DIR" --transport shim
run_client py-sets-mcp1 "$OPENHUMAN_INTEROP_DIR/py1/bin/python" "$HERE/py_client_sets.py" --bin-dir "$BIN_DIR" --transport shim
# Confirmations through elicitation (forget, secrets), both eras, through the shim.
run_client py-confirm2 "$OPENHUMAN_INTEROP_DIR/py2/bin/python" "$HERE/py_confirm.py" --bin-dir "$BIN_DIR"
run_client py-confirm1 "$OPENHUMAN_INTEROP_DIR/py1/bin/python" "$HERE/py_confirm.py" --bin-dir "$BIN_DIR"
run_client ts-sdk node "$HERE/node/ts_client.mjs" --bin-dir "$BIN_DIR" --node-dir "$OPENHUMAN_INTEROP_DIR/node"

interop_finish
