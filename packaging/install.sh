#!/bin/sh
# Installs openhuman-mcp for this user from an unpacked release tarball: runs
# `./openhumand-mcp install`, which copies both binaries to ~/.local/bin, installs the login
# service and offers to register the MCP clients it finds. Arguments are passed on, e.g.
#   ./install.sh --prefix ~/bin --no-service --register cursor,claude-code
# `openhumand-mcp uninstall` undoes it (your memory stays unless --purge).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
exec "$here/openhumand-mcp" install "$@"
