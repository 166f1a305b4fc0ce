#!/usr/bin/env node
// Interop test over Streamable HTTP: the official TypeScript MCP SDK (@modelcontextprotocol/sdk)
// and mcp-remote (npm; a stdio server that bridges to an HTTP MCP server), both pinned in
// package-lock.json.
//
//   node tests/interop/node/ts_http_client.mjs --bin-dir target/debug [--node-dir DIR]
//        [--via direct|mcp-remote|mcp-remote-auto|all] [--auth none|bearer|both]
//
// It starts `openhumand-mcp serve --http --port 0` in a fresh temporary OPENHUMAN_HOME (the port
// comes from the daemon's `HTTP transport listening addr=…` log line), then runs the same checks
// through each way in:
//
//   direct           `Client` + `StreamableHTTPClientTransport` to http://127.0.0.1:PORT/mcp
//                    (the `initialize` handshake: SDK 1.x speaks only that era)
//   mcp-remote       `Client` + `StdioClientTransport` launching `mcp-remote URL` (its default,
//                    `--protocol legacy`: the client's handshake goes through unchanged)
//   mcp-remote-auto  the same with `--protocol auto`: mcp-remote probes `server/discover` and, on a
//                    2026-07-28 server, answers the handshake itself and sends stateless requests
//
// once against a daemon without auth and once against one started with a bearer token
// (OPENHUMAN_MCP_AUTH_TOKEN; the SDK gets it through `requestInit.headers`, mcp-remote through
// `--header "Authorization: Bearer ${VAR}"`). Each daemon is stopped with `openhumand-mcp stop`.
// The SDK and mcp-remote are loaded from DIR/node_modules (DIR: --node-dir, else
// $OPENHUMAN_INTEROP_DIR/node, else target/interop/node, else this directory).
//
// Prints `ok - <name>` / `not ok - <name>: <reason>` per check and `# ...` diagnostics; exits 1 when
// anything failed. Every step is bounded by a timeout. OPENHUMAN_INTEROP_TRACE=DIR logs the direct
// cases' HTTP exchanges to DIR/<case>.log.

import { spawn, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';

import {
  CHECK_TIMEOUT_MS, HANDSHAKE_VERSIONS, REQUEST_OPTS, REQUIRED_RESOURCES, close, connect, describe,
  expect, failRest, finish, loadSdk, note, parseArgs, report, runChecks, runMain, tally, textOf,
  withTimeout,
} from './common.mjs';

const START_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 10_000;

const REQUIRED_TOOLS = ['core.list_tools', 'agent.list_subagents', 'memory.search', 'memory.store'];
const CLIENT_NAME = 'HTTP Interop';
// A word no prompt or agent text contains, so a search hit can only be the stored document.
const NEEDLE = 'quokkaferry';
const TOKEN_VAR = 'OPENHUMAN_INTEROP_TOKEN';

// The SDK with its Streamable HTTP client, and mcp-remote (`remote`: its version and script; null
// when it is not installed next to the SDK).
function loadClients(nodeDir) {
  const sdk = loadSdk(nodeDir, ['client/index.js', 'client/stdio.js', 'client/streamableHttp.js']);
  const remotePkg = path.join(sdk.nodeModules, 'mcp-remote', 'package.json');
  const remote = fs.existsSync(remotePkg) ? JSON.parse(fs.readFileSync(remotePkg, 'utf8')) : null;
  sdk.remote = remote && { version: remote.version, bin: path.join(sdk.nodeModules, 'mcp-remote', remote.bin['mcp-remote']) };
  return sdk;
}

const indent = (text) => text.trim().split('\n').map((l) => `#   ${l}`).join('\n');

// ---------------------------------------------------------------------------------------------
// The daemon under test

class HttpDaemon {
  constructor(daemon, home, token) {
    this.daemon = daemon;
    this.env = { OPENHUMAN_HOME: home, PATH: process.env.PATH || '/usr/bin:/bin' };
    // The daemon without a token is the explicit opt-out (by default it would generate one).
    if (token) this.env.OPENHUMAN_MCP_AUTH_TOKEN = token;
    else this.env.OPENHUMAN_MCP_HTTP_ALLOW_NO_TOKEN = 'true';
    this.stderr = '';
    this.sessionsCreated = 0;
    this.proc = spawn(daemon, ['serve', '--http', '--port', '0'], { env: this.env, stdio: ['ignore', 'ignore', 'pipe'] });
    this.exited = new Promise((resolve) => this.proc.on('exit', (code, signal) => resolve(code ?? signal)));
    // Resolves with the address once the daemon logs that it listens; no polling.
    this.listening = new Promise((resolve, reject) => {
      const lines = readline.createInterface({ input: this.proc.stderr });
      lines.on('line', (line) => {
        this.stderr = (this.stderr + line + '\n').slice(-6000);
        if (line.includes('HTTP session created')) this.sessionsCreated++;
        const m = /HTTP transport listening addr=(\S+)/.exec(line);
        if (m) resolve(m[1]);
      });
      this.exited.then((code) => reject(new Error(`the daemon exited (${code}) before listening`)));
    });
  }

  async start() {
    this.addr = await withTimeout(this.listening, START_TIMEOUT_MS, 'daemon start');
    this.url = `http://${this.addr}/mcp`;
  }

  run(...args) {
    return spawnSync(this.daemon, args, { env: this.env, encoding: 'utf8', timeout: CHECK_TIMEOUT_MS });
  }

  async stop() {
    if (this.proc.exitCode !== null) return [false, `the daemon had already exited with status ${this.proc.exitCode}`];
    const out = this.run('stop');
    const said = `${out.stdout || ''}${out.stderr || ''}`.trim();
    try {
      const code = await withTimeout(this.exited, STOP_TIMEOUT_MS, 'stop');
      return [code === 0, `exited with status ${code} (${said})`];
    } catch {
      this.proc.kill('SIGKILL');
      return [false, `still running ${STOP_TIMEOUT_MS / 1000} s after \`openhumand-mcp stop\` (${said}); killed it`];
    }
  }

  tail(lines = 15) {
    return this.stderr.trim().split('\n').slice(-lines).join('\n');
  }
}

// ---------------------------------------------------------------------------------------------
// What went over the wire (direct cases): a `fetch` that records every exchange

const SHOWN_REQUEST = ['accept', 'content-type', 'mcp-session-id', 'mcp-protocol-version', 'authorization'];
const SHOWN_RESPONSE = ['content-type', 'mcp-session-id', 'www-authenticate'];

function shown(headers, names) {
  const out = {};
  for (const name of names) {
    let v = headers.get(name);
    if (v === null || v === undefined) continue;
    if (name === 'authorization') v = `${v.split(' ')[0]} <redacted>`;
    if (name === 'mcp-session-id') v = `${v.slice(0, 8)}...`;
    out[name] = v;
  }
  return out;
}

class Wire {
  constructor(tracePath) {
    this.exchanges = [];
    this.tracePath = tracePath;
    if (tracePath) fs.rmSync(tracePath, { force: true });
    this.fetch = async (url, init = {}) => {
      const request = new Request(url, init);
      const body = typeof init.body === 'string' ? init.body : '';
      const response = await fetch(request);
      const ex = {
        method: request.method,
        path: new URL(request.url).pathname,
        requestHeaders: request.headers,
        body,
        status: response.status,
        responseHeaders: response.headers,
        responseBody: null,
      };
      if (this.tracePath && (response.headers.get('content-type') || '').startsWith('application/json')) {
        ex.responseBody = await response.clone().text();
      }
      this.exchanges.push(ex);
      if (this.tracePath) fs.appendFileSync(this.tracePath, `${Wire.format(ex)}\n`);
      return response;
    };
  }

  static format(ex) {
    const req = `>> ${ex.method} ${ex.path} ${JSON.stringify(shown(ex.requestHeaders, SHOWN_REQUEST))} ${ex.body.slice(0, 400)}`;
    const resp = `<< ${ex.status} ${JSON.stringify(shown(ex.responseHeaders, SHOWN_RESPONSE))} ${(ex.responseBody || '').slice(0, 400)}`;
    return `${req}\n${resp}`;
  }

  static rpcMethod(ex) {
    try {
      return JSON.parse(ex.body).method;
    } catch {
      return undefined;
    }
  }

  evidence(last = 4) {
    return this.exchanges.slice(-last).map(Wire.format).join('\n');
  }
}

// ---------------------------------------------------------------------------------------------
// The checks

const CHECKS = [
  ['tools/list has core.list_tools, agent.list_subagents, memory.search, memory.store', async (c) => {
    const names = (await c.client.listTools(undefined, REQUEST_OPTS)).tools.map((t) => t.name);
    const missing = REQUIRED_TOOLS.filter((n) => !names.includes(n));
    expect(missing.length === 0, `missing ${missing}; got ${names}`);
  }],
  ['tools/call agent.list_subagents: >= 12 agents with orchestrator', async (c) => {
    const res = await c.client.callTool({ name: 'agent.list_subagents', arguments: {} }, undefined, REQUEST_OPTS);
    expect(!res.isError, `isError: ${textOf(res)}`);
    const agents = res.structuredContent?.agents;
    expect(Array.isArray(agents), `no structuredContent.agents: ${JSON.stringify(res).slice(0, 300)}`);
    const ids = agents.map((a) => a.id);
    expect(agents.length >= 12 && ids.includes('orchestrator'), `${agents.length} agents, want >= 12 with orchestrator: ${ids}`);
  }],
  ['tools/call memory.store: audit row has the client\'s source', async (c) => {
    const args = { title: `HTTP interop ${c.label}`, content: `Notes about the ${NEEDLE} timetable.` };
    const res = await c.client.callTool({ name: 'memory.store', arguments: args }, undefined, REQUEST_OPTS);
    expect(!res.isError, `isError: ${textOf(res)}`);
    c.storedId = res.structuredContent?.id;
    expect(typeof c.storedId === 'string', `no structuredContent.id: ${JSON.stringify(res).slice(0, 300)}`);
    const out = c.daemon.run('audit', '--json', '--limit', '1');
    expect(out.status === 0, `\`openhumand-mcp audit --json --limit 1\` exited ${out.status}: ${(out.stderr || '').slice(-300)}`);
    const rows = out.stdout.split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l));
    expect(rows.length === 1, `want 1 audit row, got ${rows.length}: ${out.stdout.slice(0, 300)}`);
    const row = rows[0];
    expect(row.tool === 'memory.store' && row.result_id === c.storedId, `last audit row is not this store: ${JSON.stringify(row).slice(0, 300)}`);
    expect(row.source === c.expectedSource,
      `source ${JSON.stringify(row.source)}, want ${JSON.stringify(c.expectedSource)} (client_info ${JSON.stringify(row.client_info)})`);
  }],
  ['tools/call memory.search finds the stored document', async (c) => {
    const res = await c.client.callTool({ name: 'memory.search', arguments: { query: NEEDLE } }, undefined, REQUEST_OPTS);
    expect(!res.isError, `isError: ${textOf(res)}`);
    const hits = res.structuredContent?.hits;
    expect(Array.isArray(hits), `no structuredContent.hits: ${JSON.stringify(res).slice(0, 300)}`);
    const sources = hits.map((h) => h.source_id);
    expect(sources.includes(c.storedId), `the stored document ${c.storedId} is not among the hits ${sources}`);
  }],
  ['resources/list has identity, soul, user, agents/orchestrator', async (c) => {
    const uris = (await c.client.listResources(undefined, REQUEST_OPTS)).resources.map((r) => r.uri);
    const missing = REQUIRED_RESOURCES.filter((u) => !uris.includes(u));
    expect(missing.length === 0, `missing ${missing}; got ${uris}`);
  }],
  ['resources/read identity: markdown text', async (c) => {
    const res = await c.client.readResource({ uri: 'openhuman://prompts/identity' }, REQUEST_OPTS);
    const first = (res.contents || [])[0];
    expect(first, `no contents: ${JSON.stringify(res).slice(0, 300)}`);
    expect(first.mimeType === 'text/markdown', `mimeType ${first.mimeType}`);
    expect(typeof first.text === 'string' && first.text.trimStart().startsWith('#'),
      `not markdown text: ${String(first.text).slice(0, 120)}`);
  }],
];

// `Claude Desktop` → `mcp:claude-desktop`: what the server should make of a client name.
function sourceOf(name) {
  const slug = name.trim().toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '');
  return slug ? `mcp:${slug}` : 'mcp';
}

// The checks for case `c`; after a failure the last HTTP exchanges of a direct case are the evidence.
function runCaseChecks(c) {
  return runChecks(CHECKS, c.label, c, c.done, () => {
    if (c.wire) note(`last HTTP exchanges:\n${indent(c.wire.evidence())}`);
  });
}

function traceFile(label) {
  const dir = process.env.OPENHUMAN_INTEROP_TRACE;
  if (!dir) return null;
  fs.mkdirSync(dir, { recursive: true });
  return path.join(path.resolve(dir), `${label.replace(/[ /]/g, '_')}.log`);
}

// ---------------------------------------------------------------------------------------------
// Cases

async function runDirect(sdk, prefix, daemon, token) {
  const label = `${prefix} direct ${token ? 'bearer' : 'no-auth'}`;
  const wire = new Wire(traceFile(label));
  const headers = token ? { Authorization: `Bearer ${token}` } : {};
  const transport = new sdk.StreamableHTTPClientTransport(new URL(daemon.url), { requestInit: { headers }, fetch: wire.fetch });
  const client = new sdk.Client({ name: CLIENT_NAME, version: '0.0.0' });
  const c = { label, client, daemon, wire, done: new Set(), expectedSource: sourceOf(CLIENT_NAME) };
  try {
    const started = Date.now();
    await connect(client, transport);
    const negotiated = transport.protocolVersion;
    const sessionId = transport.sessionId;
    note(`${label}: connected in ${((Date.now() - started) / 1000).toFixed(2)} s, protocol ${negotiated}`);
    report(`${label}: session initialises`,
      HANDSHAKE_VERSIONS.has(negotiated) && client.getServerVersion()?.name === 'openhuman-core' && /^[0-9a-f]{32}$/.test(sessionId || ''),
      `negotiated ${negotiated}, serverInfo ${JSON.stringify(client.getServerVersion())}, Mcp-Session-Id ${sessionId ? 'set' : 'missing'}`);
    c.done.add('init');
    await runCaseChecks(c);

    const bare = token ? wire.exchanges.filter((e) => e.requestHeaders.get('authorization') !== `Bearer ${token}`) : [];
    const errors = wire.exchanges.filter((e) => e.status >= 400);
    const unsessioned = wire.exchanges.filter((e) => Wire.rpcMethod(e) !== 'initialize' && e.requestHeaders.get('mcp-session-id') !== sessionId);
    report(`${label}: HTTP: session header / bearer token on every request, no HTTP errors`,
      !bare.length && !errors.length && !unsessioned.length,
      `without the token: ${bare.map((e) => `${e.method} ${Wire.rpcMethod(e)}`)}; ` +
      `HTTP errors: ${errors.map((e) => `${e.method} ${Wire.rpcMethod(e)} -> ${e.status}`)}; ` +
      `without the session id: ${unsessioned.map((e) => `${e.method} ${Wire.rpcMethod(e)}`)}`);

    // The SDK ends a session only when asked; then the id must be dead.
    await withTimeout(transport.terminateSession(), CHECK_TIMEOUT_MS, 'terminateSession');
    const del = wire.exchanges.filter((e) => e.method === 'DELETE').map((e) => e.status);
    const after = await fetch(daemon.url, {
      method: 'POST',
      headers: {
        ...headers,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-session-id': sessionId,
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 99, method: 'tools/list' }),
    });
    report(`${label}: terminateSession DELETEs the session (204), its id then gets 404`,
      del.length === 1 && del[0] === 204 && after.status === 404, `DELETE statuses ${del}, then a request with the id: ${after.status}`);
    await close(client);
  } catch (e) {
    const why = describe(e);
    if (wire.exchanges.length) note(`${label}: last HTTP exchanges:\n${indent(wire.evidence(6))}`);
    failRest(CHECKS, c.label, c.done, why);
    await close(client).catch(() => {});
  }
}

async function runRemote(sdk, prefix, daemon, token, protocol, scratch) {
  const label = `${prefix} mcp-remote${sdk.remote.version} --protocol ${protocol} ${token ? 'bearer' : 'no-auth'}`;
  const args = [sdk.remote.bin, daemon.url, '--protocol', protocol];
  // The token reaches mcp-remote through its environment (mcp-remote expands `${VAR}` in header
  // values), so it never shows on a command line.
  if (token) args.push('--header', `Authorization: Bearer \${${TOKEN_VAR}}`);
  const configDir = fs.mkdtempSync(path.join(scratch, 'mcp-remote-'));
  const env = { PATH: process.env.PATH || '/usr/bin:/bin', HOME: configDir, MCP_REMOTE_CONFIG_DIR: configDir };
  if (token) env[TOKEN_VAR] = token;
  let stderr = '';
  const transport = new sdk.StdioClientTransport({ command: process.execPath, args, env, stderr: 'pipe' });
  transport.stderr?.on('data', (d) => {
    stderr = (stderr + d.toString()).slice(-8000);
  });
  let negotiated;
  transport.setProtocolVersion = (v) => {
    negotiated = v;
  };
  const client = new sdk.Client({ name: CLIENT_NAME, version: '0.0.0' });
  // mcp-remote tells the server `<name> (via mcp-remote <version>)` (it rewrites clientInfo.name in
  // the handshake it forwards, and uses that name in its own 2026-07-28 requests).
  const expectedSource = sourceOf(`${CLIENT_NAME} (via mcp-remote ${sdk.remote.version})`);
  const c = { label, client, daemon, wire: null, done: new Set(), expectedSource };
  const sessionsBefore = daemon.sessionsCreated;
  const failedBefore = tally.failed;
  try {
    const started = Date.now();
    await connect(client, transport);
    note(`${label}: connected in ${((Date.now() - started) / 1000).toFixed(2)} s, protocol ${negotiated} (client side)`);
    const bridged = /Proxy established successfully between local STDIO and remote (\S+)/.exec(stderr)?.[1];
    // What mcp-remote speaks to us: `auto` finds 2026-07-28 in server/discover and goes stateless
    // (the daemon mints no session); `legacy` forwards the handshake (one session).
    const modern = /Remote server speaks MCP (\S+);/.exec(stderr)?.[1];
    const wantEra = protocol === 'auto' ? '2026-07-28' : undefined;
    report(`${label}: session initialises over Streamable HTTP, ${protocol === 'auto' ? 'stateless 2026-07-28 upstream' : 'handshake upstream'}`,
      HANDSHAKE_VERSIONS.has(negotiated) && client.getServerVersion()?.name === 'openhuman-core' &&
        bridged === 'StreamableHTTPClientTransport' && modern === wantEra,
      `negotiated ${negotiated}, serverInfo ${JSON.stringify(client.getServerVersion())}, remote transport ${bridged}, ` +
        `upstream era ${modern || 'handshake'} (want ${wantEra || 'handshake'})`);
    c.done.add('init');
    await runCaseChecks(c);
    // Before bridging, mcp-remote connects a throw-away client (`mcp-remote-fallback-test`) to see
    // whether Streamable HTTP works, and never closes it: in legacy mode that is a second session,
    // which our idle expiry and session cap clean up. In auto mode both go stateless.
    const minted = daemon.sessionsCreated - sessionsBefore;
    const wantMinted = protocol === 'auto' ? 0 : 2;
    report(`${label}: the daemon minted ${wantMinted} HTTP sessions`, minted === wantMinted,
      `it logged \`HTTP session created\` ${minted} times`);
    const closing = Date.now();
    await close(client);
    note(`${label}: closed in ${((Date.now() - closing) / 1000).toFixed(2)} s`);
    if (tally.failed > failedBefore && stderr.trim()) note(`${label}: mcp-remote stderr tail:\n${indent(stderr.split('\n').slice(-15).join('\n'))}`);
  } catch (e) {
    const why = describe(e);
    if (stderr.trim()) note(`${label}: mcp-remote stderr tail:\n${indent(stderr.split('\n').slice(-15).join('\n'))}`);
    failRest(CHECKS, c.label, c.done, why);
    await close(client).catch(() => {});
  }
}

// Against the daemon with a token, the SDK without it must be refused with 401 + WWW-Authenticate.
async function runRefused(sdk, prefix, daemon) {
  const name = `${prefix} direct bearer: without the token the connection is refused (401)`;
  const wire = new Wire(traceFile(`${prefix} direct bearer no-token`));
  const transport = new sdk.StreamableHTTPClientTransport(new URL(daemon.url), { fetch: wire.fetch });
  const client = new sdk.Client({ name: CLIENT_NAME, version: '0.0.0' });
  try {
    await connect(client, transport);
    report(name, false, 'connected without a token');
  } catch (e) {
    const statuses = wire.exchanges.map((x) => x.status);
    const challenged = wire.exchanges.every((x) => x.status === 401 && (x.responseHeaders.get('www-authenticate') || '').startsWith('Bearer'));
    report(name, statuses.length > 0 && challenged, `statuses ${statuses} (${describe(e)})`);
  } finally {
    await close(client).catch(() => {});
  }
}

async function main() {
  const o = parseArgs(process.argv.slice(2), { via: 'all', auth: 'both' });
  const daemonBin = path.join(path.resolve(o.binDir), 'openhumand-mcp');
  try {
    fs.accessSync(daemonBin, fs.constants.X_OK);
  } catch {
    console.log('not ok - ts-sdk http: openhumand-mcp not found in the bin dir (build first)');
    return 1;
  }
  let sdk;
  try {
    sdk = loadClients(o.nodeDir);
  } catch (e) {
    console.log(`not ok - ts-sdk http: ${describe(e)}`);
    return 1;
  }
  const prefix = `ts-sdk${sdk.version} http`;
  const vias = o.via === 'all' ? ['direct', 'mcp-remote', 'mcp-remote-auto'] : [o.via];
  if (vias.some((v) => v.startsWith('mcp-remote')) && !sdk.remote) {
    console.log('not ok - mcp-remote: not installed next to the SDK (run tests/interop/setup.sh)');
    return 1;
  }
  note(`@modelcontextprotocol/sdk ${sdk.version}${sdk.remote ? `, mcp-remote ${sdk.remote.version}` : ''}; via ${vias}`);
  const tokens = { none: [null], bearer: [true], both: [null, true] }[o.auth];
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'openhuman-interop-http-'));
  try {
    for (const wantToken of tokens) {
      const token = wantToken ? crypto.randomBytes(24).toString('base64url') : null;
      const home = path.join(scratch, token ? 'home-bearer' : 'home');
      fs.mkdirSync(home);
      const daemon = new HttpDaemon(daemonBin, home, token);
      const auth = token ? 'bearer' : 'no-auth';
      try {
        await daemon.start();
      } catch (e) {
        report(`${prefix} ${auth}: daemon starts with --http --port 0`, false, describe(e));
        note(`daemon stderr tail:\n${indent(daemon.tail())}`);
        daemon.proc.kill('SIGKILL');
        continue;
      }
      note(`daemon ${token ? 'with a bearer token' : 'without auth'} listening on ${daemon.url}`);
      try {
        for (const via of vias) {
          if (via === 'direct') await runDirect(sdk, prefix, daemon, token);
          else await runRemote(sdk, prefix, daemon, token, via === 'mcp-remote-auto' ? 'auto' : 'legacy', scratch);
        }
        if (token && vias.includes('direct')) await runRefused(sdk, prefix, daemon);
      } finally {
        const [stopped, what] = await daemon.stop();
        report(`${prefix} ${auth}: daemon stops on \`openhumand-mcp stop\``, stopped, what);
        if (!stopped) note(`daemon stderr tail:\n${indent(daemon.tail())}`);
      }
    }
  } finally {
    fs.rmSync(scratch, { recursive: true, force: true });
  }
  return finish(prefix);
}

runMain(main, 'ts-sdk http');
