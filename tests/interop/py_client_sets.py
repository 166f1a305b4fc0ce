#!/usr/bin/env python3
"""Interop test: a tool set per client (`[clients.<name>]`), seen by the official Python MCP SDK.

Run with the Python of a venv that has `mcp` installed (tests/interop/setup.sh makes two):

    py2/bin/python tests/interop/py_client_sets.py --bin-dir target/debug --transport shim
    py2/bin/python tests/interop/py_client_sets.py --bin-dir target/debug --transport http

Each case is one transport and one connection mode of the installed SDK (2.x: `auto`, which
lands on stateless 2026-07-28 where the client names itself in every request's `_meta`, and
`legacy`, the `initialize` handshake; 1.x: `session`), in a fresh OPENHUMAN_HOME whose config
gives the client "Reader App" a few tools at the readonly level and "writer-app" every tool but
`memory.forget`. Three clients connect at once (through `openhuman-mcp-shim`, which autostarts
the daemon, or to `openhumand-mcp serve --http --port 0`), as "Reader App", "writer-app" and
"cursor-vscode" (Cursor's real `clientInfo.name`, which has no entry yet). Checks:

  - the two named clients see different `tools/list`s, each in the catalog's order;
  - a call outside the reader's set is refused with -32602 naming `[clients.reader]` and the key
    `clients.reader.tools`, and `openhumand-mcp audit` shows the refused attempt;
  - the reader's readonly level refuses `memory.store`, which it sees; the writer stores;
  - `openhumand-mcp register cursor --readonly --tools memory.*` writes `[clients.cursor]` and
    reloads the daemon: the Cursor client hears `notifications/tools/list_changed` (through
    `subscriptions/listen` on 2026-07-28), then sees only `memory.*`, and its store is refused;
    on the handshake versions the writer, whose set did not change, hears nothing.

Every check prints `ok - <name>` or `not ok - <name>: <reason>`; exit status 0 when all passed.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import traceback
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any, AsyncIterator

import anyio

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import Implementation

from interop_common import (CHECK_TIMEOUT, CLOSE_TIMEOUT, CONNECT_TIMEOUT, MODERN, SDK_MAJOR, SDK_VERSION, SdkError, describe, dump,
                             expect, note, report, tally)
from py_client import stop_daemon
from py_http_client import START_TIMEOUT, HttpDaemon

if SDK_MAJOR >= 2:
    from mcp.client.client import Client

CONFIG = """
[clients.reader]
names = ["Reader App"]
tools = ["core.*", "memory.search", "memory.store"]
level = "readonly"

[clients.writer]
names = ["writer-app"]
deny_tools = ["memory.forget"]
"""
READER, WRITER, CURSOR = "Reader App", "writer-app", "cursor-vscode"
READER_TOOLS = ["core.list_tools", "core.tool_instructions", "memory.search", "memory.store"]
TOOLS_CHANGED = "notifications/tools/list_changed"


class Conn:
    """One connected client: the SDK object, its protocol version, the notifications it heard."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.target: Any = None
        self.version: str | None = None
        self.heard: list[str] = []
        self.tools_changed = anyio.Event()

    async def on_message(self, message: Any) -> None:
        root = getattr(message, "root", message)  # 1.x wraps notifications in a RootModel
        method = getattr(root, "method", None)
        if method:
            self.heard.append(method)
            if method == TOOLS_CHANGED:
                self.tools_changed.set()

    async def tools(self) -> list[str]:
        return [t["name"] for t in dump(await self.target.list_tools())["tools"]]

    async def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return dump(await self.target.call_tool(name, arguments))


@asynccontextmanager
async def connect(conn: Conn, mode: str, transport: Any) -> AsyncIterator[Conn]:
    """`transport` is an SDK transport context manager (stdio or streamable HTTP)."""
    info = Implementation(name=conn.name, version="0.0.0")
    if mode == "session":
        async with transport as streams:
            read, write = streams[0], streams[1]
            async with ClientSession(read, write, client_info=info, message_handler=conn.on_message) as session:
                result = await session.initialize()
                conn.target = session
                conn.version = result.protocolVersion if SDK_MAJOR < 2 else result.protocol_version
                yield conn
        return
    kwargs: dict[str, Any] = {} if mode == "auto" else {"mode": mode}
    async with Client(transport, client_info=info, message_handler=conn.on_message, **kwargs) as client:
        conn.target = client
        conn.version = client.session.protocol_version
        yield conn


async def refused(conn: Conn, name: str, arguments: dict[str, Any]) -> str:
    """The message of the JSON-RPC error a call must end in (-32602)."""
    try:
        res = await conn.call(name, arguments)
    except SdkError as e:
        err = getattr(e, "error", None)
        expect(err is not None and err.code == -32602, f"want -32602, got {describe(e)}")
        return err.message
    raise AssertionError(f"{name} was not refused: {json.dumps(res)[:300]}")


def in_order(sub: list[str], full: list[str]) -> bool:
    rest = iter(full)
    return all(any(f == n for f in rest) for n in sub)


class Case:
    def __init__(self, label: str, bin_dir: str, home: str, user_home: str) -> None:
        self.label = label
        self.bin_dir = bin_dir
        self.home = home
        self.user_home = user_home
        self.reader = Conn(READER)
        self.writer = Conn(WRITER)
        self.cursor = Conn(CURSOR)

    def daemon(self, *args: str) -> subprocess.CompletedProcess[str]:
        env = {"OPENHUMAN_HOME": self.home, "HOME": self.user_home, "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        return subprocess.run([os.path.join(self.bin_dir, "openhumand-mcp"), *args], env=env, capture_output=True,
                              text=True, timeout=CHECK_TIMEOUT)

    async def run(self, *args: str) -> str:
        out = await anyio.to_thread.run_sync(lambda: self.daemon(*args))
        expect(out.returncode == 0, f"`openhumand-mcp {' '.join(args)}` exited {out.returncode}: {out.stderr[-400:]}")
        return out.stdout


async def check_sets_differ(c: Case) -> None:
    everything = await c.cursor.tools()
    reader, writer = await c.reader.tools(), await c.writer.tools()
    expect(reader == READER_TOOLS, f"{READER} sees {reader}, want {READER_TOOLS}")
    expect("memory.store" in writer and "memory.forget" not in writer, f"{WRITER} sees {writer}")
    expect(len(writer) + 1 == len(everything), f"{WRITER} sees {len(writer)} of {len(everything)}")
    expect(in_order(reader, everything) and in_order(writer, everything), "not in the one catalog order")
    expect(await c.reader.tools() == reader, "a second tools/list differs from the first")


async def check_outside_refused_and_audited(c: Case) -> None:
    msg = await refused(c.reader, "tree.tag", {"chunk_id": "c1", "tags": ["x"]})
    expect(msg.startswith("[policy-blocked]") and "[clients.reader]" in msg and "`clients.reader.tools`" in msg,
           f"message {msg!r}")
    out = await c.run("audit", "--json", "--limit", "20")
    rows = [json.loads(line) for line in out.splitlines() if line.strip()]
    row = next((r for r in rows if r.get("tool") == "tree.tag"), None)
    expect(row is not None, f"no audit row for tree.tag among {[r.get('tool') for r in rows]}")
    expect(row.get("success") is False and row.get("source") == "mcp:reader-app", f"row {json.dumps(row)[:300]}")
    expect("clients.reader" in (row.get("error") or ""), f"row error {row.get('error')!r}")


async def check_readonly_level(c: Case) -> None:
    msg = await refused(c.reader, "memory.store", {"title": "t", "content": "refused"})
    expect(msg.startswith("[policy-blocked]") and "`clients.reader.level`" in msg, f"message {msg!r}")
    res = await c.writer.call("memory.store", {"title": "Writer note", "content": "The writer may store."})
    expect(not res.get("isError"), f"the writer's store failed: {res.get('content')}")


async def check_register_reload(c: Case) -> None:
    async def register() -> None:
        said = await c.run("register", "cursor", "--readonly", "--tools", "memory.*")
        expect("[clients.cursor]" in said and "reloaded" in said, f"register said {said!r}")

    if c.cursor.version == MODERN:
        from mcp.client.subscriptions import ToolsListChanged

        async with c.cursor.target.listen(tools_list_changed=True) as sub:
            await register()
            async for event in sub:
                if isinstance(event, ToolsListChanged):
                    break
    else:
        await register()
        await c.cursor.tools_changed.wait()
    tools = await c.cursor.tools()
    expect(tools and all(t.startswith("memory.") for t in tools), f"after the reload {CURSOR} sees {tools}")
    msg = await refused(c.cursor, "memory.store", {"title": "t", "content": "refused"})
    expect("`clients.cursor.level`" in msg, f"message {msg!r}")
    if c.writer.version != MODERN:
        # Notifications come in order on a connection: any notice sent at the reload arrived
        # before the answer to this request.
        await c.writer.tools()
        expect(TOOLS_CHANGED not in c.writer.heard, f"{WRITER}, whose set did not change, heard {c.writer.heard}")


CHECKS = [
    ("two clients with different names see different tools/list, in one order", check_sets_differ),
    ("a call outside the set is refused naming [clients.reader] and audited", check_outside_refused_and_audited),
    ("the readonly level refuses memory.store; the writer stores", check_readonly_level),
    ("register cursor --readonly --tools memory.* reloads: list_changed, then the new set", check_register_reload),
]


async def run_case(label: str, mode: str, transport: str, bin_dir: str, scratch: str) -> None:
    home = os.path.join(scratch, "home")
    user_home = os.path.join(scratch, "user")
    os.makedirs(home)
    os.makedirs(user_home)
    with open(os.path.join(home, "config.toml"), "w", encoding="utf-8") as f:
        f.write(CONFIG)
    case = Case(label, bin_dir, home, user_home)
    daemon: HttpDaemon | None = None
    errlog = open(os.path.join(scratch, "server-stderr.log"), "w")
    done: set[str] = set()
    try:
        if transport == "http":
            daemon = HttpDaemon(os.path.join(bin_dir, "openhumand-mcp"), home, None)
            await anyio.to_thread.run_sync(lambda: daemon.wait_listening(START_TIMEOUT))
        # One scope around the connections, so they are entered and left in the same task: its
        # deadline bounds connecting, then closing.
        with anyio.CancelScope(deadline=anyio.current_time() + 3 * CONNECT_TIMEOUT) as scope:
            async with AsyncExitStack() as stack:
                for conn in (case.reader, case.writer, case.cursor):
                    if daemon is not None:
                        http = await stack.enter_async_context(create_mcp_http_client())
                        t = streamable_http_client(daemon.url, http_client=http)
                    else:
                        env = {"OPENHUMAN_HOME": home, "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
                        params = StdioServerParameters(command=os.path.join(bin_dir, "openhuman-mcp-shim"), args=[],
                                                       env=env)
                        t = stdio_client(params, errlog=errlog)
                    await stack.enter_async_context(connect(conn, mode, t))
                scope.deadline = math.inf
                note(f"{label}: connected, protocol {case.reader.version}")
                for name, fn in CHECKS:
                    try:
                        with anyio.fail_after(CHECK_TIMEOUT):
                            await fn(case)
                        report(f"{label}: {name}", True)
                    except Exception as e:  # noqa: BLE001 - every failure is a finding
                        if os.environ.get("OPENHUMAN_INTEROP_DEBUG"):
                            traceback.print_exc()
                        why = "no answer in time" if isinstance(e, TimeoutError) else describe(e)
                        report(f"{label}: {name}", False, why)
                    done.add(name)
                scope.deadline = anyio.current_time() + CLOSE_TIMEOUT
        if scope.cancelled_caught and len(done) < len(CHECKS):
            raise TimeoutError("connecting timed out")
    except BaseException as e:  # noqa: BLE001 - a case that dies is a failure, not a crash
        if isinstance(e, KeyboardInterrupt):
            raise
        for name, _ in CHECKS:
            if name not in done:
                report(f"{label}: {name}", False, f"not run: {describe(e)}")
    finally:
        errlog.close()
        if daemon is not None:
            daemon.stop()
        else:
            stop_daemon(os.path.join(bin_dir, "openhumand-mcp"), home)
        if tally.failures:
            log = daemon.log_path if daemon is not None else os.path.join(home, "logs")
            note(f"{label}: daemon log under {log}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin-dir", default=os.environ.get("OPENHUMAN_BIN_DIR", "target/debug"))
    ap.add_argument("--transport", choices=["shim", "http"], action="append")
    opts = ap.parse_args()
    bin_dir = os.path.abspath(opts.bin_dir)
    for exe in ("openhuman-mcp-shim", "openhumand-mcp"):
        if not os.access(os.path.join(bin_dir, exe), os.X_OK):
            print(f"not ok - py-client-sets: {exe} not found in the bin dir (build first)", flush=True)
            return 1
    modes = ["auto", "legacy"] if SDK_MAJOR >= 2 else ["session"]
    prefix = f"py-mcp{SDK_VERSION} client sets"
    note(f"python mcp {SDK_VERSION}, modes {modes}")
    for transport in opts.transport or ["shim", "http"]:
        for mode in modes:
            scratch = tempfile.mkdtemp(prefix="oh-sets-")
            try:
                anyio.run(run_case, f"{prefix} {transport} {mode}", mode, transport, bin_dir, scratch)
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
    return tally.summary(prefix)


if __name__ == "__main__":
    sys.exit(main())
