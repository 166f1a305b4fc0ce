#!/usr/bin/env bash
# The project's one test command (README "Test"): formatting, lints, unit and integration tests
# against the real binaries, then the interop suites with the official MCP clients.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy -D warnings"
cargo clippy --workspace --all-targets --locked -- -D warnings
echo "== cargo build"
cargo build --workspace --locked
echo "== cargo test"
cargo test --workspace --locked
echo "== interop (official MCP clients)"
bash tests/interop/run.sh
echo "== interop over HTTP (official clients and mcp-remote)"
bash tests/interop/run-http.sh
echo "== conformance (@modelcontextprotocol/conformance over HTTP)"
bash tests/conformance/run.sh
