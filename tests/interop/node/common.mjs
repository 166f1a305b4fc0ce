// Helpers shared by the Node interop clients ts_client.mjs (stdio) and ts_http_client.mjs (HTTP):
// argument parsing, finding the installed SDK, the pass/fail tally and its `ok` / `not ok` lines,
// and the timeouts every step is bounded by.

import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '..', '..', '..');

export const CONNECT_TIMEOUT_MS = 1000 * Number(process.env.OPENHUMAN_INTEROP_CONNECT_TIMEOUT || 30);
export const CHECK_TIMEOUT_MS = 20_000;
export const CLOSE_TIMEOUT_MS = 15_000;
// The options of every request a check sends.
export const REQUEST_OPTS = { timeout: CHECK_TIMEOUT_MS };

export const REQUIRED_RESOURCES = [
  'openhuman://prompts/identity',
  'openhuman://prompts/soul',
  'openhuman://prompts/user',
  'openhuman://prompts/agents/orchestrator',
];
// The versions of the `initialize` era; the SDK 1.x clients here speak nothing newer.
export const HANDSHAKE_VERSIONS = new Set(['2024-11-05', '2025-03-26', '2025-06-18', '2025-11-25']);

// Reads `--bin-dir DIR`, `--node-dir DIR` and the client's own options, given with their defaults
// in `extra` by their camelCase names (`{ via: 'all' }` takes `--via X`).
export function parseArgs(argv, extra) {
  const opts = { binDir: process.env.OPENHUMAN_BIN_DIR || 'target/debug', nodeDir: null, ...extra };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const key = a.startsWith('--') ? a.slice(2).replace(/-([a-z])/g, (_, ch) => ch.toUpperCase()) : null;
    if (key && Object.hasOwn(opts, key)) opts[key] = argv[++i];
    else throw new Error(`unknown argument ${a}`);
  }
  return opts;
}

// Loads the given entry points of @modelcontextprotocol/sdk (paths inside the package) from
// DIR/node_modules, DIR being the first of: nodeDir, $OPENHUMAN_INTEROP_DIR/node,
// target/interop/node, this directory that has the SDK. Returns their exports merged, with the
// SDK's `version` and the `nodeModules` directory it came from.
export function loadSdk(nodeDir, entryPoints) {
  const candidates = [
    nodeDir,
    process.env.OPENHUMAN_INTEROP_DIR && path.join(process.env.OPENHUMAN_INTEROP_DIR, 'node'),
    path.join(ROOT, 'target', 'interop', 'node'),
    HERE,
  ].filter(Boolean);
  for (const dir of candidates) {
    const nodeModules = path.join(path.resolve(dir), 'node_modules');
    const pkg = path.join(nodeModules, '@modelcontextprotocol', 'sdk', 'package.json');
    if (!fs.existsSync(pkg)) continue;
    const require = createRequire(path.join(path.resolve(dir), 'package.json'));
    const sdk = { version: JSON.parse(fs.readFileSync(pkg, 'utf8')).version, nodeModules };
    for (const entry of entryPoints) Object.assign(sdk, require(`@modelcontextprotocol/sdk/${entry}`));
    return sdk;
  }
  throw new Error(`@modelcontextprotocol/sdk not installed in any of: ${candidates.join(', ')} (run tests/interop/setup.sh)`);
}

// Kept in one object so that both clients read the same counts that `report` updates.
export const tally = { passed: 0, failed: 0 };

export function report(name, ok, reason = '') {
  if (ok) {
    tally.passed++;
    console.log(`ok - ${name}`);
  } else {
    tally.failed++;
    const why = String(reason).split(/\s+/).join(' ').slice(0, 600) || 'failed';
    console.log(`not ok - ${name}: ${why}`);
  }
}

export const note = (text) => console.log(`# ${text}`);

export function describe(err) {
  if (err && typeof err === 'object' && 'code' in err && err.constructor?.name === 'McpError') {
    return `McpError code=${err.code} message=${JSON.stringify(err.message)} data=${JSON.stringify(err.data)}`;
  }
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}

export function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms / 1000} s`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

export function expect(cond, why) {
  if (!cond) throw new Error(why);
}

export const textOf = (res) => (res.content || []).filter((c) => c.type === 'text').map((c) => c.text).join(' ');

// The SDK's own request timeout covers the handshake; ours, a second longer, also covers a
// transport that never gets that far.
export const connect = (client, transport) =>
  withTimeout(client.connect(transport, { timeout: CONNECT_TIMEOUT_MS }), CONNECT_TIMEOUT_MS + 1000, 'connect');

export const close = (client) => withTimeout(client.close(), CLOSE_TIMEOUT_MS, 'close');

// Runs each [name, fn] of `checks` as `fn(arg)`, reporting it as `<label>: <name>`. Once a check
// times out the server is taken to be hung, and the rest are reported as not run rather than each
// waiting out its own timeout. `onFailure(err)` may add evidence after a failed check's line; each
// reported name goes into `done`.
export async function runChecks(checks, label, arg, done, onFailure = () => {}) {
  let hung = null;
  for (const [name, fn] of checks) {
    if (hung) {
      report(`${label}: ${name}`, false, `not run: ${hung}`);
    } else {
      try {
        await withTimeout(fn(arg), CHECK_TIMEOUT_MS + 1000, name);
        report(`${label}: ${name}`, true);
      } catch (e) {
        report(`${label}: ${name}`, false, describe(e));
        onFailure(e);
        if (/timed out|no answer within/i.test(describe(e))) hung = `the server stopped answering (${name})`;
      }
    }
    done.add(name);
  }
}

// After a case broke off with `why`: reports its handshake (unless it was reported) and every
// check not yet in `done` as failed, so each case always prints the same lines.
export function failRest(checks, label, done, why) {
  if (!done.has('init')) report(`${label}: session initialises`, false, why);
  for (const [name] of checks) if (!done.has(name)) report(`${label}: ${name}`, false, `not run: ${why}`);
}

// Runs `main` and exits with its status; an exception it throws is one more `not ok` line for
// `who`, so the driver sees the failure in the output and not only in the exit status.
export function runMain(main, who) {
  main().then((code) => process.exit(code), (e) => {
    console.log(`not ok - ${who}: ${describe(e)}`);
    process.exit(1);
  });
}

// The last line of a client: its own tally; the exit status is 1 when anything failed.
export function finish(prefix) {
  note(`${prefix}: ${tally.passed} passed, ${tally.failed} failed`);
  return tally.failed ? 1 : 0;
}
