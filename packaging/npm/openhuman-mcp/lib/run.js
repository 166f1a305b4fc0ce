// Finds the prebuilt binary in the platform package that npm installed as an optional
// dependency (the one whose `os` and `cpu` match this machine; npm skips the others) and runs
// it with this process's arguments and stdio, passing its exit status or signal back. Nothing
// is downloaded: a missing platform package is reported with what to do about it.
"use strict";

const { spawn } = require("node:child_process");
const path = require("node:path");

// Written by packaging/npm/build.py: "<platform> <arch>" -> platform package name.
const PLATFORMS = require("./platforms.json");

function fail(message) {
  process.stderr.write(`openhuman-mcp: ${message}\n`);
  process.exit(1);
}

function binaryPath(name) {
  const key = `${process.platform} ${process.arch}`;
  const pkg = PLATFORMS[key];
  if (!pkg) {
    const known = Object.keys(PLATFORMS).join(", ");
    fail(`no prebuilt binary for ${key} (there are: ${known}); build it from source with cargo`);
  }
  let dir;
  try {
    dir = path.dirname(require.resolve(`${pkg}/package.json`));
  } catch {
    fail(
      `${pkg} is not installed. npm installs it as an optional dependency of openhuman-mcp; ` +
        "reinstall without --omit=optional / --no-optional (or install it by name)",
    );
  }
  const exe = process.platform === "win32" ? `${name}.exe` : name;
  return path.join(dir, "bin", exe);
}

function run(name) {
  const exe = binaryPath(name);
  const child = spawn(exe, process.argv.slice(2), { stdio: "inherit", windowsHide: true });
  // A client that stops its server signals this process: the binary gets the same signal.
  const forward = {};
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
    forward[signal] = () => child.kill(signal);
    process.on(signal, forward[signal]);
  }
  child.on("error", (err) => fail(`cannot run ${exe}: ${err.message}`));
  child.on("exit", (code, signal) => {
    if (signal) {
      // End the same way the binary did, so the caller sees the signal, not a made-up code.
      if (forward[signal]) process.removeListener(signal, forward[signal]);
      process.kill(process.pid, signal);
      return;
    }
    process.exit(code === null ? 1 : code);
  });
}

module.exports = { run, binaryPath };
