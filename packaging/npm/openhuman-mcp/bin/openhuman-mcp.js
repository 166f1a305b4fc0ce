#!/usr/bin/env node
// `openhuman-mcp`: the stdio server MCP clients launch (`npx -y openhuman-mcp`). It runs
// openhuman-mcp-shim from this platform's package, which starts the daemon beside it on demand.
"use strict";
require("../lib/run.js").run("openhuman-mcp-shim");
