#!/usr/bin/env python3
"""Interop test: the official Python MCP SDK (`mcp`, 1.x or 2.x) over Streamable HTTP.

Run with the Python of a venv that has `mcp` installed (tests/interop/setup.sh makes two):

    py2/bin/python tests/interop/py_http_client.py --bin-dir target/debug

It starts `openhumand-mcp serve --http --port 0` in a fresh temporary OPENHUMAN_HOME (reading the
port from the daemon's `HTTP transport listening addr=...` log line), connects with the SDK's own
streamable HTTP client to `http://127.0.0.1:PORT/mcp` and runs the checks below; then it does the
same against a second daemon started with a bearer token (OPENHUMAN_MCP_AUTH_TOKEN), sending the
token through the SDK's HTTP client headers. Each daemon is stopped with `openhumand-mcp stop`.
Modes:

  2.x  auto     `Client(transport)`: the SDK default; probes `server/discover` and, since the
                server advertises 2026-07-28, speaks the stateless era (no session)
       legacy   `Client(transport, mode="legacy")`: the `initialize` handshake, `Mcp-Session-Id`
  1.x  session  `ClientSession(read, write)` + `initialize()` (the only 1.x way)

Every HTTP exchange is recorded through the HTTP client's event hooks; a failing check prints the
last exchanges as evidence, and OPENHUMAN_INTEROP_TRACE=DIR writes them all to DIR/<case>.log.
Every check prints `ok - <name>` or `not ok - <name>: <reason>`; `# ...` lines are diagnostics.
Exit status: 0 when every check passed, 1 otherwise. Every step is bounded by a timeout.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator

import anyio

from mcp import ClientSession, types
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.types import Implementation

from interop_common import (Api, CHECK_TIMEOUT, CLOSE_TIMEOUT, CONNECT_TIMEOUT, HANDSHAKE_VERSIONS, MODERN,
                             REQUIRED_RESOURCES, SDK_MAJOR, SDK_VERSION, check_completion, check_recall_prompt,
                             check_subscription, describe, dump, expect, note, report, run_checks, tally,
                             updates_handler)

if SDK_MAJOR >= 2:
    from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client

REQUIRED_TOOLS = ["core.list_tools", "agent.list_subagents", "memory.search", "memory.store"]
CLIENT_NAME = "HTTP Interop"
EXPECTED_SOURCE = "mcp:http-interop"
# A word no prompt or agent text contains, so a search hit can only be the stored document.
NEEDLE = "quokkaferry"

START_TIMEOUT = 30.0  # daemon start → listening line (the memory store is created first)
STOP_TIMEOUT = 10.0
LISTENING = re.compile(r"HTTP transport listening addr=(\S+)")


class HttpDaemon:
    """`openhumand-mcp serve --http --port 0` in its own home; knows its URL once it listens."""

    def __init__(self, daemon: str, home: str, token: str | None) -> None:
        self.daemon = daemon
        self.home = home
        self.env = {"OPENHUMAN_HOME": home, "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        if token:
            self.env["OPENHUMAN_MCP_AUTH_TOKEN"] = token
        else:
            # The explicit opt-out: by default the daemon would generate a token and require it.
            self.env["OPENHUMAN_MCP_HTTP_ALLOW_NO_TOKEN"] = "true"
        self.log_path = os.path.join(os.path.dirname(home), "daemon-stderr.log")
        self.addr: str | None = None
        self._listening = threading.Event()
        self.proc = subprocess.Popen(
            [daemon, "serve", "--http", "--port", "0"],
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        # Copies the daemon's stderr to a file and spots the listening line: no polling.
        self._reader = threading.Thread(target=self._read_stderr, daemon=True)
        self._reader.start()

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        with open(self.log_path, "wb") as log:
            for raw in self.proc.stderr:
                log.write(raw)
                log.flush()
                if self.addr is None:
                    m = LISTENING.search(raw.decode("utf-8", "replace"))
                    if m:
                        self.addr = m.group(1)
                        self._listening.set()
        self._listening.set()  # stderr closed: the daemon exited

    def wait_listening(self, timeout: float) -> str:
        if not self._listening.wait(timeout):
            raise TimeoutError(f"the daemon did not log `HTTP transport listening` within {timeout:.0f} s")
        if self.addr is None:
            raise RuntimeError(f"the daemon exited ({self.proc.wait()}) before listening")
        return self.addr

    @property
    def url(self) -> str:
        return f"http://{self.addr}/mcp"

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [self.daemon, *args], env=self.env, capture_output=True, text=True, timeout=CHECK_TIMEOUT
        )

    def stop(self) -> tuple[bool, str]:
        """`openhumand-mcp stop`, then a bounded wait for the process; killed when it lingers."""
        if self.proc.poll() is not None:
            return False, f"the daemon had already exited with status {self.proc.returncode}"
        try:
            out = self.run("stop")
            said = (out.stdout + out.stderr).strip()
        except subprocess.TimeoutExpired:
            said = "`stop` itself timed out"
        try:
            code = self.proc.wait(timeout=STOP_TIMEOUT)
            self._reader.join(timeout=5)
            return code == 0, f"exited with status {code} ({said})"
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)
            return False, f"still running {STOP_TIMEOUT:.0f} s after `openhumand-mcp stop` ({said}); killed it"

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=5)

    def stderr_tail(self, lines: int = 15) -> str:
        try:
            with open(self.log_path, encoding="utf-8", errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return ""


# ---------------------------------------------------------------------------------------------
# What went over the wire


SHOWN_REQUEST_HEADERS = ("accept", "content-type", "mcp-session-id", "mcp-protocol-version", "mcp-method", "mcp-name",
                         "authorization", "last-event-id")
SHOWN_RESPONSE_HEADERS = ("content-type", "mcp-session-id", "www-authenticate")


def shown(headers: Any, names: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for name in names:
        value = headers.get(name)
        if value is None:
            continue
        if name == "authorization":
            value = value.split(" ", 1)[0] + " <redacted>"
        elif name == "mcp-session-id":
            value = value[:8] + "..."
        out[name] = value
    return out


class Wire:
    """Every request/response pair of one case, from the HTTP client's response hook."""

    def __init__(self, trace_path: str | None) -> None:
        self.exchanges: list[dict[str, Any]] = []
        self.trace_path = trace_path
        if trace_path and os.path.exists(trace_path):
            os.remove(trace_path)

    async def on_response(self, response: Any) -> None:
        req = response.request
        try:
            body = req.content.decode("utf-8", "replace")
        except Exception:  # noqa: BLE001 - a streamed request body
            body = "<stream>"
        ex = {
            "method": req.method,
            "path": req.url.path,
            "request_headers": {k.lower(): v for k, v in req.headers.items()},
            "body": body,
            "status": response.status_code,
            "response_headers": {k.lower(): v for k, v in response.headers.items()},
            "response_body": None,
        }
        # JSON answers are complete: read them now (the SDK then reads the cached body). Event
        # streams stay untouched: the GET stream never ends.
        if self.trace_path and response.headers.get("content-type", "").startswith("application/json"):
            ex["response_body"] = (await response.aread()).decode("utf-8", "replace")
        self.exchanges.append(ex)
        if self.trace_path:
            with open(self.trace_path, "a", encoding="utf-8") as f:
                f.write(self.format(ex) + "\n")

    @staticmethod
    def format(ex: dict[str, Any]) -> str:
        req = f">> {ex['method']} {ex['path']} {json.dumps(shown(ex['request_headers'], SHOWN_REQUEST_HEADERS))}"
        if ex["body"]:
            req += f" {ex['body'][:400]}"
        resp = f"<< {ex['status']} {json.dumps(shown(ex['response_headers'], SHOWN_RESPONSE_HEADERS))}"
        if ex["response_body"]:
            resp += f" {ex['response_body'][:400]}"
        return req + "\n" + resp

    def rpc_method(self, ex: dict[str, Any]) -> str | None:
        try:
            msg = json.loads(ex["body"])
        except ValueError:
            return None
        return msg.get("method") if isinstance(msg, dict) else None

    def posts(self) -> list[dict[str, Any]]:
        return [e for e in self.exchanges if e["method"] == "POST"]

    def evidence(self, last: int = 4) -> str:
        return "\n".join(self.format(e) for e in self.exchanges[-last:])


# ---------------------------------------------------------------------------------------------
# Connecting


@asynccontextmanager
async def connect(mode: str, url: str, headers: dict[str, str], wire: Wire, roots: Any = None) -> AsyncIterator[Api]:
    """`roots`: a `list_roots_callback`, which makes the client declare the roots capability."""
    info = Implementation(name=CLIENT_NAME, version="0.0.0")
    handler, updates = updates_handler()
    extra: dict[str, Any] = {"list_roots_callback": roots} if roots else {}
    async with create_mcp_http_client(headers=headers or None) as http:
        http.event_hooks = {"response": [wire.on_response]}
        if mode == "session":
            async with streamable_http_client(url, http_client=http) as streams:
                read, write = streams[0], streams[1]  # 1.x adds a get_session_id callback
                async with ClientSession(read, write, client_info=info, message_handler=handler, **extra) as session:
                    result = await session.initialize()
                    api = Api(session, result.protocolVersion if SDK_MAJOR < 2 else result.protocol_version)
                    api.updates = updates
                    yield api
            return
        kwargs: dict[str, Any] = {} if mode == "auto" else {"mode": mode}
        client = Client(
            streamable_http_client(url, http_client=http), client_info=info, message_handler=handler, **kwargs, **extra
        )
        async with client:
            api = Api(client, client.session.protocol_version)
            api.updates = updates
            yield api


# ---------------------------------------------------------------------------------------------
# The checks. Each takes the case and raises (AssertionError or anything) to fail.


class Case:
    def __init__(self, label: str, mode: str, daemon: HttpDaemon, api: Api, wire: Wire, token: str | None) -> None:
        self.label = label
        self.mode = mode
        self.daemon = daemon
        self.api = api
        self.wire = wire
        self.token = token
        self.stored_id: str | None = None


async def check_tools_list(c: Case) -> None:
    tools = (await c.api.list_tools()).get("tools", [])
    names = [t.get("name") for t in tools]
    missing = [n for n in REQUIRED_TOOLS if n not in names]
    expect(not missing, f"missing {missing}; got {names}")


async def check_list_subagents(c: Case) -> None:
    res = await c.api.call_tool("agent.list_subagents", {})
    expect(not res.get("isError"), f"isError: {res.get('content')}")
    agents = (res.get("structuredContent") or {}).get("agents")
    expect(isinstance(agents, list), f"no structuredContent.agents: {json.dumps(res)[:300]}")
    ids = [a.get("id") for a in agents]
    expect(len(agents) >= 12 and "orchestrator" in ids, f"{len(agents)} agents, want >= 12 with orchestrator: {ids}")


async def check_store_provenance(c: Case) -> None:
    title = f"HTTP interop {c.label}"
    res = await c.api.call_tool("memory.store", {"title": title, "content": f"Notes about the {NEEDLE} timetable."})
    expect(not res.get("isError"), f"isError: {res.get('content')}")
    c.stored_id = (res.get("structuredContent") or {}).get("id")
    expect(isinstance(c.stored_id, str), f"no structuredContent.id: {json.dumps(res)[:300]}")
    out = await anyio.to_thread.run_sync(lambda: c.daemon.run("audit", "--json", "--limit", "1"))
    expect(out.returncode == 0, f"`openhumand-mcp audit --json --limit 1` exited {out.returncode}: {out.stderr[-300:]}")
    rows = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
    expect(len(rows) == 1, f"want 1 audit row, got {len(rows)}: {out.stdout[:300]!r}")
    row = rows[0]
    expect(row.get("tool") == "memory.store" and row.get("result_id") == c.stored_id,
           f"last audit row is not this store: {json.dumps(row)[:300]}")
    expect(row.get("source") == EXPECTED_SOURCE, f"source {row.get('source')!r}, want {EXPECTED_SOURCE!r}: {json.dumps(row)[:300]}")


async def check_memory_search(c: Case) -> None:
    res = await c.api.call_tool("memory.search", {"query": NEEDLE})
    expect(not res.get("isError"), f"isError: {res.get('content')}")
    hits = (res.get("structuredContent") or {}).get("hits")
    expect(isinstance(hits, list), f"no structuredContent.hits: {json.dumps(res)[:300]}")
    sources = [h.get("source_id") for h in hits]
    expect(c.stored_id in sources, f"the stored document {c.stored_id!r} is not among the hits {sources}")


async def check_resources_list(c: Case) -> None:
    resources = (await c.api.list_resources()).get("resources", [])
    uris = [str(r.get("uri")) for r in resources]
    missing = [u for u in REQUIRED_RESOURCES if u not in uris]
    expect(not missing, f"missing {missing}; got {uris}")


async def check_read_identity(c: Case) -> None:
    res = await c.api.read_resource("openhuman://prompts/identity")
    contents = res.get("contents", [])
    expect(len(contents) >= 1, f"no contents: {json.dumps(res)[:300]}")
    first = contents[0]
    expect(first.get("mimeType") == "text/markdown", f"mimeType {first.get('mimeType')!r}")
    text = first.get("text")
    expect(isinstance(text, str) and text.lstrip().startswith("#"), f"not markdown text: {str(text)[:120]!r}")


async def check_wire(c: Case) -> None:
    """The HTTP shape of the era: sessions carry Mcp-Session-Id, the stateless era none; the
    token went with every request when one is configured."""
    posts = c.wire.posts()
    expect(posts, "no POST recorded")
    if c.mode == "auto":
        with_id = [c.wire.rpc_method(p) for p in posts if "mcp-session-id" in p["request_headers"]]
        expect(not with_id, f"stateless-era requests carried Mcp-Session-Id: {with_id}")
        discover = [p for p in posts if c.wire.rpc_method(p) == "server/discover"]
        expect(discover and discover[0]["status"] == 200, f"server/discover: {[p['status'] for p in discover]}")
    else:
        init = [p for p in posts if c.wire.rpc_method(p) == "initialize"]
        expect(init and "mcp-session-id" in init[0]["response_headers"],
               "the initialize response carried no Mcp-Session-Id")
        sid = init[0]["response_headers"]["mcp-session-id"]
        later = posts[posts.index(init[0]) + 1:]
        wrong = [c.wire.rpc_method(p) for p in later if p["request_headers"].get("mcp-session-id") != sid]
        expect(not wrong, f"requests after initialize without the session id: {wrong}")
    if c.token:
        bare = [f"{e['method']} {c.wire.rpc_method(e)}" for e in c.wire.exchanges
                if e["request_headers"].get("authorization") != f"Bearer {c.token}"]
        expect(not bare, f"requests without the bearer token: {bare}")
    refused = [f"{e['method']} {c.wire.rpc_method(e)} -> {e['status']}" for e in c.wire.exchanges
               if e["status"] >= 400]
    expect(not refused, f"HTTP errors: {refused}")


async def check_http_subscription(c: Case) -> None:
    await check_subscription(c.api)


async def check_http_recall_prompt(c: Case) -> None:
    await check_recall_prompt(c.api)


async def check_http_completion(c: Case) -> None:
    await check_completion(c.api)


class RootsAnswer:
    """A `list_roots_callback` giving one folder, counting how often the server asked."""

    def __init__(self, folder: str) -> None:
        self.uri = "file://" + folder
        self.asked = 0

    async def __call__(self, context: Any) -> Any:
        self.asked += 1
        return types.ListRootsResult(roots=[types.Root(uri=self.uri, name="interop project")])


async def check_roots_project(c: Case) -> None:
    """A second client of the same daemon, with roots: its root (a folder inside a git
    repository) names the project of what it stores, and its search prefers that project over
    a near-identical document of another one."""
    scratch = os.path.dirname(c.daemon.home)
    repo = os.path.join(scratch, f"roots-repo-{c.mode}")
    os.makedirs(os.path.join(repo, ".git"), exist_ok=True)
    os.makedirs(os.path.join(repo, "docs"), exist_ok=True)
    answer = RootsAnswer(os.path.join(repo, "docs"))
    word = f"wombatlane{c.mode.replace('-', '')}{'t' if c.token else 'n'}"
    # Stored by the first client (no roots) into another project, named explicitly.
    other = sc(await c.api.call_tool("memory.store", {
        "title": f"North pier {c.label}", "content": f"The {word} timetable for the north pier.",
        "project": "/elsewhere/other-project"}))
    async with connect(c.mode, c.daemon.url, {"Authorization": f"Bearer {c.token}"} if c.token else {},
                       Wire(None), roots=answer) as api:
        mine = sc(await api.call_tool("memory.store", {
            "title": f"South pier {c.label}", "content": f"The {word} timetable for the south pier."}))
        expect(answer.asked >= 1, "the server never asked roots/list")
        found = sc(await api.call_tool("memory.search", {"query": word, "filter": {"project": repo}}))["hits"]
        expect([h.get("source_id") for h in found] == [mine["id"]] and found[0].get("project") == repo,
               f"want only {mine['id']} in project {repo}: {found}")
        hits = sc(await api.call_tool("memory.search", {"query": word}))["hits"]
        order = [h.get("source_id") for h in hits]
        expect(order[:2] == [mine["id"], other["id"]], f"the root's project first: {order} ({hits[:2]})")
        # The two are near-identical, so the boost decides the order: naming the other project
        # turns it round.
        turned = sc(await api.call_tool("memory.search", {"query": word, "prefer_project": "/elsewhere/other-project"}))
        order = [h.get("source_id") for h in turned["hits"]]
        expect(order[:2] == [other["id"], mine["id"]], f"prefer_project named: {order}")
        if c.mode == "auto":
            # 2026-07-28 has no session to keep them on: each call that needs a project asks.
            expect(answer.asked >= 3, f"asked {answer.asked} times over 3 calls")
        else:
            expect(answer.asked == 1, f"a handshake session asks once and keeps the answer; asked {answer.asked}")
    note(f"{c.label}: roots asked {answer.asked} times; project {repo}")


CHECKS = [
    ("tools/list has core.list_tools, agent.list_subagents, memory.search, memory.store", check_tools_list),
    ("tools/call agent.list_subagents: >= 12 agents with orchestrator", check_list_subagents),
    (f"tools/call memory.store: audit row has source {EXPECTED_SOURCE}", check_store_provenance),
    ("tools/call memory.search finds the stored document", check_memory_search),
    ("resources/list has identity, soul, user, agents/orchestrator", check_resources_list),
    ("resources/read identity: markdown text", check_read_identity),
    ("prompts/get recall_context: the stored note, cited, within a 300-token budget", check_http_recall_prompt),
    ("completion/complete: the stored hashtag as a topic; memory ids that read as resources", check_http_completion),
    ("a store is heard by a subscriber to openhuman://memory (resources/updated)", check_http_subscription),
    ("MCP roots: a client's root names its project (git root above it) for store, and search prefers it",
     check_roots_project),
    ("HTTP: session header / bearer token on every request, no HTTP errors", check_wire),
]


def sc(res: dict[str, Any]) -> dict[str, Any]:
    expect(not res.get("isError"), f"the tool failed: {json.dumps(res.get('content'))[:300]}")
    return res.get("structuredContent") or {}


def trace_file(label: str) -> str | None:
    trace_dir = os.environ.get("OPENHUMAN_INTEROP_TRACE")
    if not trace_dir:
        return None
    os.makedirs(trace_dir, exist_ok=True)
    return os.path.join(os.path.abspath(trace_dir), re.sub(r"[ /]", "_", label) + ".log")


async def run_case(prefix: str, mode: str, daemon: HttpDaemon, token: str | None) -> None:
    label = f"{prefix} {mode} {'bearer' if token else 'no-auth'}"
    wire = Wire(trace_file(label))
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    done: set[str] = set()
    phase = "connect"
    try:
        with anyio.CancelScope(deadline=anyio.current_time() + CONNECT_TIMEOUT) as scope:
            started = time.monotonic()
            async with connect(mode, daemon.url, headers, wire) as api:
                scope.deadline = math.inf
                phase = "checks"
                version = api.protocol_version
                note(f"{label}: connected in {time.monotonic() - started:.2f} s, protocol {version}")
                if mode == "auto":
                    ok, why = version == MODERN, f"negotiated {version}, want {MODERN} (advertised in server/discover)"
                else:
                    ok, why = version in HANDSHAKE_VERSIONS, f"negotiated {version!r}, not a handshake-era version"
                report(f"{label}: session initialises", ok, why + "\n" + wire.evidence())
                done.add("init")
                case = Case(label, mode, daemon, api, wire, token)
                await run_checks(label, CHECKS[:-1], case, done,
                                 lambda: note("last HTTP exchanges:\n" + wire.evidence()))
                phase = "close"
                scope.deadline = anyio.current_time() + CLOSE_TIMEOUT
        if scope.cancelled_caught:
            raise TimeoutError(f"{phase} timed out")
        name, fn = CHECKS[-1]
        try:
            await fn(case)
            report(f"{label}: {name}", True)
        except Exception as e:  # noqa: BLE001
            report(f"{label}: {name}", False, describe(e))
        done.add(name)
        if mode != "auto":
            deletes = [e["status"] for e in wire.exchanges if e["method"] == "DELETE"]
            report(f"{label}: closing DELETEs the session (204)", deletes == [204], f"DELETE statuses {deletes}")
        done.add("close")
    except BaseException as e:  # noqa: BLE001
        if isinstance(e, KeyboardInterrupt):
            raise
        why = str(e) if isinstance(e, TimeoutError) and str(e) else describe(e)
        if os.environ.get("OPENHUMAN_INTEROP_DEBUG"):
            traceback.print_exc()
        if wire.exchanges:
            note(f"{label}: last HTTP exchanges:\n" + "\n".join("#   " + l for l in wire.evidence(6).splitlines()))
        if "init" not in done:
            report(f"{label}: session initialises", False, why)
        for name, _ in CHECKS:
            if name not in done:
                report(f"{label}: {name}", False, f"not run: {why}")
        if mode != "auto" and "close" not in done:
            report(f"{label}: closing DELETEs the session (204)", False, f"not run: {why}")


async def check_refused_without_token(prefix: str, mode: str, daemon: HttpDaemon) -> None:
    """Against the daemon with a token, the same SDK without it must fail to connect, on a 401."""
    label = f"{prefix} {mode} bearer"
    wire = Wire(trace_file(label + " no-token"))
    name = f"{label}: without the token the connection is refused (401)"
    try:
        with anyio.fail_after(CONNECT_TIMEOUT):
            async with connect(mode, daemon.url, {}, wire):
                pass
        report(name, False, "connected without a token")
    except TimeoutError:
        report(name, False, f"no answer within {CONNECT_TIMEOUT:.0f} s\n{wire.evidence()}")
    except Exception as e:  # noqa: BLE001 - the expected outcome; the wire says why
        statuses = [ex["status"] for ex in wire.exchanges]
        challenged = all(
            ex["status"] == 401 and ex["response_headers"].get("www-authenticate", "").startswith("Bearer")
            for ex in wire.exchanges
        )
        report(name, bool(statuses) and challenged,
               f"statuses {statuses} ({describe(e)})")


def start_daemon(daemon_bin: str, scratch: str, token: str | None) -> HttpDaemon | None:
    home = os.path.join(scratch, "home-bearer" if token else "home")
    os.mkdir(home)
    d = HttpDaemon(daemon_bin, home, token)
    try:
        d.wait_listening(START_TIMEOUT)
        note(f"daemon {'with a bearer token' if token else 'without auth'} listening on {d.url}")
        return d
    except Exception as e:  # noqa: BLE001
        report(f"py-mcp{SDK_VERSION}: daemon starts with --http --port 0", False, describe(e))
        note("daemon stderr tail:\n" + "\n".join("#   " + l for l in d.stderr_tail().splitlines()))
        d.kill()
        return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin-dir", default=os.environ.get("OPENHUMAN_BIN_DIR", "target/debug"))
    ap.add_argument("--mode", action="append", help="run only these modes (repeatable)")
    ap.add_argument("--auth", choices=["none", "bearer", "both"], default="both")
    opts = ap.parse_args()
    daemon_bin = os.path.join(os.path.abspath(opts.bin_dir), "openhumand-mcp")
    if not os.access(daemon_bin, os.X_OK):
        print(f"not ok - py-mcp{SDK_VERSION} http: openhumand-mcp not found in the bin dir (build first)", flush=True)
        return 1
    modes = ["auto", "legacy"] if SDK_MAJOR >= 2 else ["session"]
    if opts.mode:
        modes = [m for m in modes if m in opts.mode]
    prefix = f"py-mcp{SDK_VERSION} http"
    note(f"python mcp {SDK_VERSION}, modes {modes}")
    tokens = {"none": [None], "bearer": ["t"], "both": [None, "t"]}[opts.auth]
    scratch = tempfile.mkdtemp(prefix="openhuman-interop-http-")
    try:
        for token in tokens:
            if token:
                token = secrets.token_urlsafe(24)
            daemon = start_daemon(daemon_bin, scratch, token)
            if daemon is None:
                continue
            try:
                for mode in modes:
                    anyio.run(run_case, prefix, mode, daemon, token)
                if token:
                    anyio.run(check_refused_without_token, prefix, modes[0], daemon)
            finally:
                stopped, what = daemon.stop()
                report(f"{prefix} {'bearer' if token else 'no-auth'}: daemon stops on `openhumand-mcp stop`",
                       stopped, what)
                if not stopped:
                    note("daemon stderr tail:\n" + "\n".join("#   " + l for l in daemon.stderr_tail().splitlines()))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return tally.summary(prefix)


if __name__ == "__main__":
    sys.exit(main())
