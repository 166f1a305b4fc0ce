#!/usr/bin/env node
// `openhumand-mcp`: the daemon and its commands (serve, status, stop, install, ui, ...), from
// this platform's package.
"use strict";
require("../lib/run.js").run("openhumand-mcp");
