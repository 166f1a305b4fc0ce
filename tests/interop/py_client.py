#!/usr/bin/env python3
"""Interop test: the official Python MCP SDK (`mcp`, 1.x or 2.x) as a client of openhuman-mcp.

Run with the Python of a venv that has `mcp` installed (tests/interop/setup.sh makes two):

    py2/bin/python tests/interop/py_client.py --bin-dir target/debug

For every server command (the shim `openhuman-mcp-shim`, and `openhumand-mcp stdio`) and every
connection mode the installed SDK offers, it launches the server through the SDK's own
`stdio_client` / `StdioServerParameters`, with OPENHUMAN_HOME set to a fresh temporary directory,
and runs the same checks. Modes:

  2.x  auto        `Client(params)`: the SDK default; probes `server/discover`, then speaks 2026-07-28
       legacy      `Client(params, mode="legacy")`: the `initialize` handshake
       2026-07-28  `Client(params, mode="2026-07-28")`: pinned modern version, no probe
       session     low-level `ClientSession(read, write)` + `initialize()`
  1.x  session     `ClientSession(read, write)` + `initialize()` (the only 1.x way)

Every check prints `ok - <name>` or `not ok - <name>: <reason>`; `# ...` lines are diagnostics.
Exit status: 0 when every check passed, 1 otherwise. Every step is bounded by a timeout.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator

import anyio

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from interop_common import (Api, CLOSE_TIMEOUT, CONNECT_TIMEOUT, HANDSHAKE_VERSIONS, MODERN,
                             REQUIRED_RESOURCES, SDK_MAJOR, SDK_VERSION, SdkError, check_completion,
                             check_prompt_missing_argument, check_prompts_list, check_recall_prompt,
                             check_subscription, describe, dump, expect, note, report, run_checks, tally,
                             updates_handler)

if SDK_MAJOR >= 2:
    from mcp.client.client import Client

REQUIRED_TOOLS = ["core.list_tools", "core.tool_instructions", "agent.list_subagents"]
CLEAN_EXIT_SECONDS = 1.9  # under the SDK's 2 s grace: the server exited on stdin EOF by itself


@asynccontextmanager
async def connect(mode: str, params: StdioServerParameters, errlog: Any) -> AsyncIterator[Api]:
    handler, updates = updates_handler()
    if mode == "session":
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write, message_handler=handler) as session:
                result = await session.initialize()
                api = Api(session, result.protocolVersion if SDK_MAJOR < 2 else result.protocol_version)
                api.updates = updates
                yield api
        return
    # 2.x high-level client; `Client(StdioServerParameters)` launches it with `stdio_client`.
    kwargs: dict[str, Any] = {} if mode == "auto" else {"mode": mode}
    client = Client(stdio_client(params, errlog=errlog), message_handler=handler, **kwargs)
    async with client:
        api = Api(client, client.session.protocol_version)
        api.updates = updates
        yield api


def server_env(home: str) -> dict[str, str]:
    return {"OPENHUMAN_HOME": home, "PATH": os.environ.get("PATH", "/usr/bin:/bin")}


def daemon_status(daemon: str, home: str) -> dict[str, Any] | None:
    try:
        out = subprocess.run(
            [daemon, "status", "--json"],
            env={**os.environ, "OPENHUMAN_HOME": home},
            capture_output=True,
            text=True,
            timeout=10,
        )
        return json.loads(out.stdout or "null")
    except (subprocess.TimeoutExpired, ValueError, OSError):
        return None


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # An exited daemon is a zombie until its parent (init, once the shim detached it) reaps it, and a
    # zombie still answers signal 0: on Linux, look at its state.
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def wait_pid_exit(pid: int, timeout: float) -> bool:
    """Bounded wait for a process that is not our child to exit (pidfd where available)."""
    deadline = time.monotonic() + timeout
    if hasattr(os, "pidfd_open"):
        import select

        try:
            fd = os.pidfd_open(pid)
        except ProcessLookupError:
            return True
        except OSError:
            fd = None
        if fd is not None:
            try:
                ready, _, _ = select.select([fd], [], [], timeout)
                return bool(ready)
            finally:
                os.close(fd)
    while pid_alive(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


def stop_daemon(daemon: str, home: str) -> tuple[bool, str]:
    """Stops a daemon running under `home`. Returns (was it stopped cleanly, what happened)."""
    status = daemon_status(daemon, home)
    if not status or not status.get("pid"):
        return False, f"no daemon running (status: {status})"
    pid = int(status["pid"])
    try:
        subprocess.run(
            [daemon, "stop"],
            env={**os.environ, "OPENHUMAN_HOME": home},
            capture_output=True,
            timeout=10,
        )
    except subprocess.TimeoutExpired:
        pass
    if wait_pid_exit(pid, 10.0):
        after = daemon_status(daemon, home)
        if after and after.get("pid"):
            # Something (a shim still connected) autostarted a new daemon: stop that one too.
            stop_daemon(daemon, home)
            return False, f"pid {pid} exited but another daemon (pid {after['pid']}) answers now"
        return True, f"pid {pid} exited after `openhumand-mcp stop`"
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    wait_pid_exit(pid, 5.0)
    return False, f"pid {pid} still running 10 s after `openhumand-mcp stop`; killed it"


def tail(path: str, lines: int = 15) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError:
        return ""


# ---------------------------------------------------------------------------------------------
# The checks. Each takes the Api and raises (AssertionError or anything) to fail.


async def check_tools_list(api: Api) -> None:
    tools = (await api.list_tools()).get("tools", [])
    names = [t.get("name") for t in tools]
    missing = [n for n in REQUIRED_TOOLS if n not in names]
    expect(not missing, f"missing {missing}; got {names}")


async def check_list_subagents(api: Api) -> None:
    res = await api.call_tool("agent.list_subagents", {})
    expect(not res.get("isError"), f"isError: {res.get('content')}")
    sc = res.get("structuredContent")
    expect(isinstance(sc, dict), f"no structuredContent: {json.dumps(res)[:300]}")
    agents = sc.get("agents")
    expect(isinstance(agents, list), f"structuredContent has no agents list: {list(sc)}")
    ids = [a.get("id") for a in agents]
    expect(len(agents) >= 12, f"{len(agents)} agents, want >= 12: {ids}")
    expect("orchestrator" in ids, f"no orchestrator in {ids}")
    bad = [a.get("id") for a in agents if not isinstance(a.get("dispatchable_over_mcp"), bool)]
    expect(not bad, f"agents without a boolean dispatchable_over_mcp: {bad}")


async def check_core_list_tools(api: Api) -> None:
    res = await api.call_tool("core.list_tools", {})
    expect(not res.get("isError"), f"isError: {res.get('content')}")
    sc = res.get("structuredContent") or {}
    expect(isinstance(sc.get("tools"), list), f"structuredContent.tools missing: {json.dumps(res)[:300]}")
    expect(sc.get("count") == len(sc["tools"]), f"count {sc.get('count')} != {len(sc['tools'])} tools")


async def check_tool_instructions(api: Api) -> None:
    res = await api.call_tool("core.tool_instructions", {})
    expect(not res.get("isError"), f"isError: {res.get('content')}")
    md = (res.get("structuredContent") or {}).get("markdown")
    expect(isinstance(md, str) and md.strip() != "", f"no markdown: {json.dumps(res)[:300]}")


async def check_unknown_argument(api: Api) -> None:
    try:
        res = await api.call_tool("core.list_tools", {"bogus_arg": 1})
    except SdkError as e:
        raise AssertionError(f"raised instead of returning an isError result: {describe(e)}") from None
    expect(res.get("isError") is True, f"isError is {res.get('isError')!r}: {json.dumps(res)[:300]}")
    texts = " ".join(c.get("text", "") for c in res.get("content", []) if c.get("type") == "text")
    expect("bogus_arg" in texts, f"text does not name the argument: {texts[:300]!r}")


async def check_unknown_tool(api: Api) -> None:
    try:
        res = await api.call_tool("no.such_tool", {})
    except SdkError as e:
        expect("no.such_tool" in describe(e), f"error does not name the tool: {describe(e)}")
        return
    # Some SDKs turn a tool error into a result; that is acceptable when it is flagged.
    expect(res.get("isError") is True, f"unknown tool succeeded: {json.dumps(res)[:300]}")


async def check_resources_list(api: Api) -> None:
    resources = (await api.list_resources()).get("resources", [])
    uris = [str(r.get("uri")) for r in resources]
    missing = [u for u in REQUIRED_RESOURCES if u not in uris]
    expect(not missing, f"missing {missing}; got {uris}")


async def check_read_identity(api: Api) -> None:
    res = await api.read_resource("openhuman://prompts/identity")
    contents = res.get("contents", [])
    expect(len(contents) >= 1, f"no contents: {json.dumps(res)[:300]}")
    c = contents[0]
    expect(str(c.get("uri")) == "openhuman://prompts/identity", f"uri {c.get('uri')!r}")
    expect(c.get("mimeType") == "text/markdown", f"mimeType {c.get('mimeType')!r}")
    text = c.get("text")
    expect(isinstance(text, str) and text.lstrip().startswith("#"), f"not markdown text: {str(text)[:120]!r}")


OVERSIZED_BYTES = 10 * 1024 * 1024  # over the daemon's 8 MiB default line limit


async def check_oversized_store(api: Api) -> None:
    # The daemon answers a line over its limit with the request's own id (read from the line's
    # head), so the SDK gets an error for this call instead of waiting for its own timeout.
    started = time.monotonic()
    try:
        res = await api.call_tool("memory.store", {"title": "huge", "content": "x" * OVERSIZED_BYTES})
    except SdkError as e:
        why = describe(e)
        expect("timed out" not in why.lower(), f"the SDK timed out instead of getting an answer: {why}")
        expect("limit" in why and "ingest" in why, f"the error does not say the limit and what to do: {why[:300]}")
        note(f"10 MB memory.store refused in {time.monotonic() - started:.2f} s: {why[:200]}")
        # The session goes on.
        await check_tool_instructions(api)
        return
    raise AssertionError(f"a 10 MB memory.store was accepted: {json.dumps(res)[:300]}")


def sc(res: dict[str, Any]) -> dict[str, Any]:
    expect(not res.get("isError"), f"the tool failed: {json.dumps(res.get('content'))[:300]}")
    return res.get("structuredContent") or {}


async def check_facts(api: Api) -> None:
    # A fact stored again under its title supersedes the old version, which stays marked.
    v1 = sc(await api.call_tool("memory.store", {
        "title": "Interop deploy day", "content": "Deploys go out on Fridays.", "observed_at": "2025-01-10T00:00:00Z"}))
    v2 = sc(await api.call_tool("memory.store", {
        "title": "Interop deploy day", "content": "Deploys go out on Tuesdays now.",
        "observed_at": "2025-06-10T00:00:00Z"}))
    old, new = v1["chunk_ids"][0], v2["chunk_ids"][0]
    expect(v2.get("supersedes") == [old], f"supersedes: {v2}")
    chunks = sc(await api.call_tool("memory.recall", {"query": "when do deploys go out Fridays"}))["chunks"]
    ids = [c["chunk_id"] for c in chunks]
    expect(new in ids and old in ids and ids.index(new) < ids.index(old), f"current first: {ids}")
    mark = chunks[ids.index(old)].get("superseded") or {}
    expect(mark.get("by") == new and mark.get("superseded_at", "").startswith("2025-06-10"), f"the mark: {mark}")
    history = sc(await api.call_tool("memory.history", {"id": old}))
    expect(history.get("current") == new and len(history.get("versions", [])) == 2, f"history: {history}")
    then = sc(await api.call_tool("memory.recall", {"query": "deploys go out", "as_of": "2025-03-01T00:00:00Z"}))
    expect(then["chunks"] and then["chunks"][0]["chunk_id"] == old, f"as_of: {then['chunks'][:2]}")
    # The same subject and attribute with another value supersedes, whatever the titles and words.
    lived = sc(await api.call_tool("memory.store", {
        "title": "Interop home", "content": "I live in Windhoek.", "observed_at": "2024-02-01T00:00:00Z"}))
    moved = sc(await api.call_tool("memory.store", {
        "title": "Interop news", "content": "We moved to Zagreb last spring!", "observed_at": "2025-02-01T00:00:00Z"}))
    expect(moved.get("supersedes") == lived["chunk_ids"], f"a move supersedes: {moved}")
    chain = sc(await api.call_tool("memory.history", {"id": moved["chunk_ids"][0]}))
    expect([v["chunk_id"] for v in chain.get("versions", [])] == lived["chunk_ids"] + moved["chunk_ids"]
           and chain["versions"][0].get("reason") == "same_attribute", f"the move's history: {chain}")
    # The same fact again is merged into the current one.
    again = sc(await api.call_tool("memory.store", {"title": "Interop deploy again", "content": "deploys go out on tuesdays"}))
    expect(again.get("status") == "merged" and again.get("merged_into") == v2["id"], f"merge: {again}")
    # What a session stores belongs to its project (the shim's working folder's git root), when
    # the session began with the handshake; the filter finds it.
    project = getattr(api, "expect_project", None)
    if project:
        hit = sc(await api.call_tool("memory.search", {"query": "Tuesdays", "filter": {"project": project}}))["hits"]
        expect(hit and hit[0].get("project") == project, f"the session's project {project}: {hit[:1]}")
        note(f"stored into the session's project {project}")


CHECKS = [
    ("tools/list has core.list_tools, core.tool_instructions, agent.list_subagents", check_tools_list),
    ("agent.list_subagents: >= 12 agents with orchestrator and dispatchable_over_mcp", check_list_subagents),
    ("core.list_tools returns its tool list", check_core_list_tools),
    ("core.tool_instructions returns markdown", check_tool_instructions),
    ("core.list_tools with an unknown argument: isError naming it", check_unknown_argument),
    ("unknown tool: error", check_unknown_tool),
    ("resources/list has identity, soul, user, agents/orchestrator", check_resources_list),
    ("resources/read identity: markdown text", check_read_identity),
    ("a store is heard by a subscriber to openhuman://memory (resources/updated)", check_subscription),
    ("prompts/list has recall_context (topic required, token_budget optional) and agent.orchestrator",
     check_prompts_list),
    ("prompts/get recall_context: the stored note, cited, within a 300-token budget", check_recall_prompt),
    ("prompts/get recall_context without topic: -32602 naming it", check_prompt_missing_argument),
    ("completion/complete: the stored hashtag as a topic; memory ids that read as resources", check_completion),
    ("facts: a re-stored title supersedes (current first, history, as_of); a move in other words supersedes; the same fact again is merged; "
     "the session's project", check_facts),
    # Last: the close that follows checks the exit on EOF after a discarded line.
    ("a 10 MB memory.store fails at once with an error matched to it; the session goes on", check_oversized_store),
]


async def run_case(prefix: str, mode: str, server: str, bin_dir: str) -> None:
    daemon = os.path.join(bin_dir, "openhumand-mcp")
    if server == "shim":
        command, args = os.path.join(bin_dir, "openhuman-mcp-shim"), []
    else:
        command, args = daemon, ["stdio"]
    label = f"{prefix} {mode} {server}"
    scratch = tempfile.mkdtemp(prefix="openhuman-interop-")
    home = os.path.join(scratch, "home")
    os.mkdir(home)
    errlog_path = os.path.join(scratch, "server-stderr.log")
    trace_dir = os.environ.get("OPENHUMAN_INTEROP_TRACE")
    if trace_dir:
        os.makedirs(trace_dir, exist_ok=True)
        log = os.path.join(os.path.abspath(trace_dir), label.replace(" ", "_").replace("/", "_") + ".log")
        if os.path.exists(log):
            os.remove(log)
        wiretap = os.path.join(os.path.dirname(os.path.abspath(__file__)), "wiretap.py")
        command, args = sys.executable, [wiretap, log, "--", command, *args]
    # The client runs in a git repository's root: the shim names it as the session's project.
    repo = os.path.join(scratch, "repo")
    os.makedirs(os.path.join(repo, ".git"))
    params = StdioServerParameters(command=command, args=args, env=server_env(home), cwd=repo)
    done: set[str] = set()
    closing_started = 0.0
    phase = "connect"
    try:
        with open(errlog_path, "w") as errlog:
            # One cancel scope bounds every phase: its deadline moves from the connect budget to
            # the close budget; each check has its own nested timeout.
            with anyio.CancelScope(deadline=anyio.current_time() + CONNECT_TIMEOUT) as scope:
                started = time.monotonic()
                async with connect(mode, params, errlog) as api:
                    scope.deadline = math.inf
                    # Only the handshake carries where the client runs (the shim adds it to initialize).
                    if server == "shim" and mode not in ("auto", MODERN):
                        api.expect_project = os.path.realpath(repo)
                    phase = "checks"
                    elapsed = time.monotonic() - started
                    version = api.protocol_version
                    note(f"{label}: connected in {elapsed:.2f} s, protocol {version}")
                    if mode in ("auto", MODERN):
                        ok = version == MODERN
                        why = f"negotiated {version}, want {MODERN} (the server advertises it in server/discover)"
                    else:
                        ok = version in HANDSHAKE_VERSIONS
                        why = f"negotiated {version!r}, not a handshake-era version"
                    report(f"{label}: session initialises", ok, why)
                    done.add("init")
                    await run_checks(label, CHECKS, api, done)
                    phase = "close"
                    scope.deadline = anyio.current_time() + CLOSE_TIMEOUT
                    closing_started = time.monotonic()
            if scope.cancelled_caught:
                raise TimeoutError(f"{phase} timed out")
            closed_in = time.monotonic() - closing_started
            report(
                f"{label}: server exits on stdin EOF",
                closed_in < CLEAN_EXIT_SECONDS,
                f"closing took {closed_in:.2f} s: the SDK had to signal the server after its 2 s grace",
            )
            done.add("close")
    except BaseException as e:  # noqa: BLE001
        if isinstance(e, KeyboardInterrupt):
            raise
        why = describe(e)
        if isinstance(e, TimeoutError):
            why = str(e) or "timed out"
        if os.environ.get("OPENHUMAN_INTEROP_DEBUG"):
            traceback.print_exc()
        err_tail = tail(errlog_path)
        if err_tail:
            note(f"{label}: server stderr tail:\n" + "\n".join("#   " + l for l in err_tail.splitlines()))
        if "init" not in done:
            report(f"{label}: session initialises", False, why)
        for name, _ in CHECKS:
            if name not in done:
                report(f"{label}: {name}", False, f"not run: {why}")
        if "close" not in done:
            report(f"{label}: server exits on stdin EOF", False, why)
    finally:
        stopped, what = stop_daemon(daemon, home)
        if server == "shim":
            report(f"{label}: autostarted daemon stops on `openhumand-mcp stop`", stopped, what)
        elif stopped or "still running" in what:
            report(f"{label}: no daemon left behind", False, what)
        shutil.rmtree(scratch, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin-dir", default=os.environ.get("OPENHUMAN_BIN_DIR", "target/debug"))
    ap.add_argument("--server", choices=["shim", "stdio", "all"], default="all")
    ap.add_argument("--mode", action="append", help="run only these modes (repeatable)")
    opts = ap.parse_args()
    bin_dir = os.path.abspath(opts.bin_dir)
    for exe in ("openhuman-mcp-shim", "openhumand-mcp"):
        if not os.access(os.path.join(bin_dir, exe), os.X_OK):
            print(f"not ok - py{SDK_VERSION}: {exe} not found in the bin dir (build first)", flush=True)
            return 1
    modes = ["auto", "legacy", MODERN, "session"] if SDK_MAJOR >= 2 else ["session"]
    if opts.mode:
        modes = [m for m in modes if m in opts.mode]
    servers = ["shim", "stdio"] if opts.server == "all" else [opts.server]
    note(f"python mcp {SDK_VERSION}, modes {modes}")
    prefix = f"py-mcp{SDK_VERSION}"
    for server in servers:
        for mode in modes:
            anyio.run(run_case, prefix, mode, server, bin_dir)
    return tally.summary(f"py-mcp{SDK_VERSION}")


if __name__ == "__main__":
    sys.exit(main())
