#!/usr/bin/env node
// Interop test: the official TypeScript MCP SDK (@modelcontextprotocol/sdk, pinned in
// package-lock.json) as a client of openhuman-mcp.
//
//   node tests/interop/node/ts_client.mjs --bin-dir target/debug [--node-dir DIR]
//
// For each server command (the shim `openhuman-mcp-shim`, and `openhumand-mcp stdio`) it launches
// the server with the SDK's `StdioClientTransport`, OPENHUMAN_HOME set to a fresh temporary
// directory, connects a `Client` (the `initialize` handshake: SDK 1.x speaks only that era) and runs
// the same checks as py_client.py. The SDK is loaded from DIR/node_modules (DIR: --node-dir, else
// $OPENHUMAN_INTEROP_DIR/node, else target/interop/node, else this directory).
//
// Prints `ok - <name>` / `not ok - <name>: <reason>` per check and `# ...` diagnostics; exits 1 when
// anything failed. Every step is bounded by a timeout.

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import {
  HANDSHAKE_VERSIONS, HERE, REQUEST_OPTS, REQUIRED_RESOURCES, close, connect, describe, expect,
  failRest, finish, loadSdk, note, parseArgs, report, runChecks, runMain, textOf,
} from './common.mjs';

const CLEAN_EXIT_MS = 1_900; // under the SDK's 2 s grace: the server exited on stdin EOF by itself

const REQUIRED_TOOLS = ['core.list_tools', 'core.tool_instructions', 'agent.list_subagents'];

// The prompt and completion checks store a note with a rare word and a hashtag, then find them
// through the `recall_context` prompt and completion.
const RECALL_WORD = 'Quetzalwing';
const RECALL_TAG = 'quetzalnotes';
// The server's token estimate: whitespace-separated words x 1.3, rounded up.
const estimateTokens = (text) => Math.ceil((text.split(/\s+/).filter(Boolean).length * 13) / 10);

const CHECKS = [
  ['tools/list has core.list_tools, core.tool_instructions, agent.list_subagents', async (c) => {
    const names = (await c.listTools(undefined, REQUEST_OPTS)).tools.map((t) => t.name);
    const missing = REQUIRED_TOOLS.filter((n) => !names.includes(n));
    expect(missing.length === 0, `missing ${missing}; got ${names}`);
  }],
  ['agent.list_subagents: >= 12 agents with orchestrator and dispatchable_over_mcp', async (c) => {
    const res = await c.callTool({ name: 'agent.list_subagents', arguments: {} }, undefined, REQUEST_OPTS);
    expect(!res.isError, `isError: ${textOf(res)}`);
    const sc = res.structuredContent;
    expect(sc && typeof sc === 'object', `no structuredContent: ${JSON.stringify(res).slice(0, 300)}`);
    expect(Array.isArray(sc.agents), `structuredContent has no agents list: ${Object.keys(sc)}`);
    const ids = sc.agents.map((a) => a.id);
    expect(sc.agents.length >= 12, `${sc.agents.length} agents, want >= 12: ${ids}`);
    expect(ids.includes('orchestrator'), `no orchestrator in ${ids}`);
    const bad = sc.agents.filter((a) => typeof a.dispatchable_over_mcp !== 'boolean').map((a) => a.id);
    expect(bad.length === 0, `agents without a boolean dispatchable_over_mcp: ${bad}`);
  }],
  ['core.list_tools returns its tool list', async (c) => {
    const res = await c.callTool({ name: 'core.list_tools', arguments: {} }, undefined, REQUEST_OPTS);
    expect(!res.isError, `isError: ${textOf(res)}`);
    const sc = res.structuredContent || {};
    expect(Array.isArray(sc.tools), `structuredContent.tools missing: ${JSON.stringify(res).slice(0, 300)}`);
    expect(sc.count === sc.tools.length, `count ${sc.count} != ${sc.tools.length} tools`);
  }],
  ['core.tool_instructions returns markdown', async (c) => {
    const res = await c.callTool({ name: 'core.tool_instructions', arguments: {} }, undefined, REQUEST_OPTS);
    expect(!res.isError, `isError: ${textOf(res)}`);
    const md = res.structuredContent?.markdown;
    expect(typeof md === 'string' && md.trim() !== '', `no markdown: ${JSON.stringify(res).slice(0, 300)}`);
  }],
  ['core.list_tools with an unknown argument: isError naming it', async (c) => {
    let res;
    try {
      res = await c.callTool({ name: 'core.list_tools', arguments: { bogus_arg: 1 } }, undefined, REQUEST_OPTS);
    } catch (e) {
      throw new Error(`threw instead of returning an isError result: ${describe(e)}`);
    }
    expect(res.isError === true, `isError is ${res.isError}: ${JSON.stringify(res).slice(0, 300)}`);
    expect(textOf(res).includes('bogus_arg'), `text does not name the argument: ${textOf(res).slice(0, 300)}`);
  }],
  ['unknown tool: error', async (c) => {
    let res;
    try {
      res = await c.callTool({ name: 'no.such_tool', arguments: {} }, undefined, REQUEST_OPTS);
    } catch (e) {
      expect(describe(e).includes('no.such_tool'), `error does not name the tool: ${describe(e)}`);
      return;
    }
    expect(res.isError === true, `unknown tool succeeded: ${JSON.stringify(res).slice(0, 300)}`);
  }],
  ['resources/list has identity, soul, user, agents/orchestrator', async (c) => {
    const uris = (await c.listResources(undefined, REQUEST_OPTS)).resources.map((r) => r.uri);
    const missing = REQUIRED_RESOURCES.filter((u) => !uris.includes(u));
    expect(missing.length === 0, `missing ${missing}; got ${uris}`);
  }],
  ['resources/read identity: markdown text', async (c) => {
    const res = await c.readResource({ uri: 'openhuman://prompts/identity' }, REQUEST_OPTS);
    const first = (res.contents || [])[0];
    expect(first, `no contents: ${JSON.stringify(res).slice(0, 300)}`);
    expect(first.uri === 'openhuman://prompts/identity', `uri ${first.uri}`);
    expect(first.mimeType === 'text/markdown', `mimeType ${first.mimeType}`);
    expect(typeof first.text === 'string' && first.text.trimStart().startsWith('#'),
      `not markdown text: ${String(first.text).slice(0, 120)}`);
  }],
  ['prompts/list has recall_context (topic required, token_budget optional) and agent.orchestrator', async (c) => {
    const prompts = (await c.listPrompts(undefined, REQUEST_OPTS)).prompts;
    const byName = Object.fromEntries(prompts.map((p) => [p.name, p]));
    expect(byName.recall_context && byName['agent.orchestrator'], `got ${Object.keys(byName)}`);
    const args = Object.fromEntries((byName.recall_context.arguments || []).map((a) => [a.name, a.required]));
    expect(args.topic === true && args.token_budget === false && Object.keys(args).length === 2,
      `recall_context arguments ${JSON.stringify(args)}`);
  }],
  ['prompts/get recall_context: the stored note, cited, within a 300-token budget', async (c) => {
    const stored = await c.callTool({ name: 'memory.store', arguments: {
      title: 'Interop field notes', content: `${RECALL_WORD} herons nest by the north pier in May. #${RECALL_TAG}`,
    } }, undefined, REQUEST_OPTS);
    expect(!stored.isError, `memory.store failed: ${textOf(stored)}`);
    const chunk = stored.structuredContent?.chunk_ids?.[0];
    const got = await c.getPrompt({ name: 'recall_context', arguments: { topic: `${RECALL_WORD} herons`, token_budget: '300' } },
      REQUEST_OPTS);
    expect(got.messages.length === 1 && got.messages[0].role === 'user', `messages: ${JSON.stringify(got.messages).slice(0, 300)}`);
    const text = got.messages[0].content.text || '';
    expect(text.includes(RECALL_WORD), `the stored note is not in the prompt: ${text.slice(0, 300)}`);
    expect(text.includes(`[chunk:${chunk}]`), `no citation [chunk:${chunk}] in ${text.slice(0, 300)}`);
    expect(estimateTokens(text) <= 300, `${estimateTokens(text)} tokens over the budget of 300`);
  }],
  ['prompts/get recall_context without topic: -32602 naming it', async (c) => {
    let got;
    try {
      got = await c.getPrompt({ name: 'recall_context', arguments: {} }, REQUEST_OPTS);
    } catch (e) {
      expect(e.code === -32602, `want -32602, got ${describe(e)}`);
      expect(String(e.message).includes('topic'), `the message does not name \`topic\`: ${e.message}`);
      return;
    }
    throw new Error(`a prompt without its required argument succeeded: ${JSON.stringify(got).slice(0, 300)}`);
  }],
  ['completion/complete: the stored hashtag as a topic; memory ids that read as resources', async (c) => {
    const topics = (await c.complete({ ref: { type: 'ref/prompt', name: 'recall_context' },
      argument: { name: 'topic', value: RECALL_TAG.slice(0, 6) } }, REQUEST_OPTS)).completion;
    expect(topics.values.includes(RECALL_TAG) && topics.hasMore === false, `topic completion: ${JSON.stringify(topics)}`);
    const ids = (await c.complete({ ref: { type: 'ref/resource', uri: 'openhuman://memory/{id}' },
      argument: { name: 'id', value: '' } }, REQUEST_OPTS)).completion;
    expect(ids.values.length >= 1 && ids.values.length <= 100 && ids.total >= ids.values.length,
      `memory id completion: ${JSON.stringify(ids)}`);
    const item = await c.readResource({ uri: `openhuman://memory/${ids.values[0]}` }, REQUEST_OPTS);
    const text = item.contents?.[0]?.text || '';
    expect(text.includes(`- id: \`${ids.values[0]}\``), `memory item ${ids.values[0]} reads as ${text.slice(0, 200)}`);
  }],
];

function daemonEnv(home) {
  return { ...process.env, OPENHUMAN_HOME: home };
}

function daemonStatus(daemon, home) {
  const st = spawnSync(daemon, ['status', '--json'], { env: daemonEnv(home), encoding: 'utf8', timeout: 10_000 });
  try {
    return JSON.parse(st.stdout || 'null');
  } catch {
    return null;
  }
}

function pidAlive(pid) {
  try {
    process.kill(pid, 0);
  } catch (e) {
    return e.code === 'EPERM';
  }
  // An exited daemon is a zombie until its parent (init, once the shim detached it) reaps it, and a
  // zombie still answers signal 0: on Linux, look at its state.
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 1).trim().split(/\s+/)[0] !== 'Z';
  } catch {
    return true;
  }
}

// Bounded wait for a process that is not our child (the shim detaches the daemon) to exit.
async function waitPidExit(pid, ms) {
  const deadline = Date.now() + ms;
  while (pidAlive(pid)) {
    if (Date.now() >= deadline) return false;
    await new Promise((r) => setTimeout(r, 50));
  }
  return true;
}

async function stopDaemon(daemon, home) {
  const status = daemonStatus(daemon, home);
  if (!status || !status.pid) return [false, `no daemon running (status: ${JSON.stringify(status)})`];
  const pid = status.pid;
  spawnSync(daemon, ['stop'], { env: daemonEnv(home), encoding: 'utf8', timeout: 10_000 });
  if (await waitPidExit(pid, 10_000)) {
    const after = daemonStatus(daemon, home);
    if (after && after.pid) {
      // Something (a shim still connected) autostarted a new daemon: stop that one too.
      await stopDaemon(daemon, home);
      return [false, `pid ${pid} exited but another daemon (pid ${after.pid}) answers now`];
    }
    return [true, `pid ${pid} exited after \`openhumand-mcp stop\``];
  }
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // gone
  }
  await waitPidExit(pid, 5_000);
  return [false, `pid ${pid} still running 10 s after \`openhumand-mcp stop\`; killed it`];
}

async function runCase(sdk, prefix, server, binDir) {
  const daemon = path.join(binDir, 'openhumand-mcp');
  let command = server === 'shim' ? path.join(binDir, 'openhuman-mcp-shim') : daemon;
  let args = server === 'shim' ? [] : ['stdio'];
  const label = `${prefix} ${server}`;
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'openhuman-interop-'));
  const home = path.join(scratch, 'home');
  fs.mkdirSync(home);
  const traceDir = process.env.OPENHUMAN_INTEROP_TRACE;
  if (traceDir) {
    fs.mkdirSync(traceDir, { recursive: true });
    const log = path.join(path.resolve(traceDir), `${label.replaceAll(' ', '_').replaceAll('/', '_')}.log`);
    fs.rmSync(log, { force: true });
    args = [path.join(HERE, '..', 'wiretap.py'), log, '--', command, ...args];
    command = process.env.PYTHON || 'python3';
  }
  let stderr = '';
  const transport = new sdk.StdioClientTransport({
    command,
    args,
    env: { OPENHUMAN_HOME: home, PATH: process.env.PATH || '/usr/bin:/bin' },
    stderr: 'pipe',
  });
  transport.stderr?.on('data', (d) => {
    stderr = (stderr + d.toString()).slice(-4000);
  });
  // The Client hands the negotiated version to transports that take it (HTTP); stdio does not, so
  // give this one the hook to learn it.
  let negotiated;
  transport.setProtocolVersion = (v) => {
    negotiated = v;
  };
  // Remember the server's pid: after a failed connect the SDK forgets its process before killing
  // it, so a hung server would outlive this test.
  let childPid = null;
  const start = transport.start.bind(transport);
  transport.start = async () => {
    await start();
    childPid = transport.pid;
  };
  const client = new sdk.Client({ name: 'openhuman-interop-ts', version: '0.0.0' });
  const done = new Set();
  try {
    const started = Date.now();
    await connect(client, transport);
    note(`${label}: connected in ${((Date.now() - started) / 1000).toFixed(2)} s, protocol ${negotiated}, server ${JSON.stringify(client.getServerVersion())}`);
    report(`${label}: session initialises`,
      HANDSHAKE_VERSIONS.has(negotiated) && client.getServerVersion()?.name === 'openhuman-core',
      `negotiated ${negotiated}, serverInfo ${JSON.stringify(client.getServerVersion())}`);
    done.add('init');
    await runChecks(CHECKS, label, client, done);
    const closing = Date.now();
    await close(client);
    const closedIn = Date.now() - closing;
    report(`${label}: server exits on stdin EOF`, closedIn < CLEAN_EXIT_MS,
      `closing took ${(closedIn / 1000).toFixed(2)} s: the SDK had to signal the server after its 2 s grace`);
    done.add('close');
  } catch (e) {
    const why = describe(e);
    if (stderr.trim()) note(`${label}: server stderr tail:\n${stderr.trim().split('\n').slice(-15).map((l) => `#   ${l}`).join('\n')}`);
    failRest(CHECKS, label, done, why);
    if (!done.has('close')) report(`${label}: server exits on stdin EOF`, false, why);
    await close(client).catch(() => {});
  } finally {
    if (childPid && pidAlive(childPid)) {
      try {
        process.kill(childPid, 'SIGKILL');
      } catch {
        // gone
      }
    }
    const [stopped, what] = await stopDaemon(daemon, home);
    if (server === 'shim') report(`${label}: autostarted daemon stops on \`openhumand-mcp stop\``, stopped, what);
    else if (stopped || what.includes('still running')) report(`${label}: no daemon left behind`, false, what);
    fs.rmSync(scratch, { recursive: true, force: true });
  }
}

async function main() {
  const opts = parseArgs(process.argv.slice(2), { server: 'all' });
  const binDir = path.resolve(opts.binDir);
  for (const exe of ['openhuman-mcp-shim', 'openhumand-mcp']) {
    try {
      fs.accessSync(path.join(binDir, exe), fs.constants.X_OK);
    } catch {
      console.log(`not ok - ts-sdk: ${exe} not found in the bin dir (build first)`);
      return 1;
    }
  }
  let sdk;
  try {
    sdk = loadSdk(opts.nodeDir, ['client/index.js', 'client/stdio.js', 'types.js']);
  } catch (e) {
    console.log(`not ok - ts-sdk: ${describe(e)}`);
    return 1;
  }
  const prefix = `ts-sdk${sdk.version}`;
  note(`@modelcontextprotocol/sdk ${sdk.version}`);
  const servers = opts.server === 'all' ? ['shim', 'stdio'] : [opts.server];
  for (const server of servers) await runCase(sdk, prefix, server, binDir);
  return finish(prefix);
}

runMain(main, 'ts-sdk');
