#!/usr/bin/env python3
"""Interop test: subagent runs through the shim with the official Python MCP SDK 2.x.

Run with the Python of the 2.x venv that tests/interop/setup.sh makes:

    py2/bin/python tests/interop/py_agents.py --bin-dir target/debug

It starts a fake OpenAI-compatible chat-completions server on loopback (scripted: the first reply
asks for `memory_search`, the reply after a tool result is the final answer; a prompt containing
HANG is never answered), points a fresh OPENHUMAN_HOME's `[llm]` at it, and drives
`openhuman-mcp-shim` (which autostarts the daemon) with `mcp.client.client.Client`:

  - a subagent run calls memory.search in its loop and returns the scripted answer, with the
    tool step in structuredContent and the tool result in the second LLM request;
  - progress notifications arrive for the run;
  - cancelling a run (the SDK sends notifications/cancelled) closes the upstream HTTP request;
  - with `[autonomy].level = "readonly"` the run is refused with -32602 `[policy-blocked]`.

Every check prints `ok - <name>` or `not ok - <name>: <reason>`; exit status 0 when all passed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import anyio

from mcp import StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError

from interop_common import CHECK_TIMEOUT, CONNECT_TIMEOUT, SDK_MAJOR, SDK_VERSION, dump, expect, note, report, tally

tally.prefix = "py-agents: "

KEY = "sk-test-OPENHUMANinteropKEY0123456789"
KEY_VAR = "OH_INTEROP_LLM_KEY"
NOTE = "The interop lighthouse on Skerry Rock is kept by Bram Olsen, who winds the clock on Sundays."
ANSWER = "Bram Olsen keeps the Skerry Rock lighthouse."


class FakeLLM:
    """An OpenAI-compatible chat-completions server that records what it is sent."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.hang_started = threading.Event()
        self.hung_up = threading.Event()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep stderr for real diagnostics
                pass

            def do_POST(self) -> None:  # noqa: N802 - the stdlib's naming
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                with fake.lock:
                    fake.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                messages = body.get("messages", [])
                users = [m.get("content", "") for m in messages if m.get("role") == "user"]
                if any("HANG" in (u or "") for u in users):
                    fake.hang_started.set()
                    # Hold the request until the client closes the connection.
                    self.connection.settimeout(60)
                    try:
                        while self.rfile.read(1):
                            pass
                    except OSError:
                        pass
                    fake.hung_up.set()
                    self.close_connection = True
                    return
                if any(m.get("role") == "tool" for m in messages):
                    message = {"role": "assistant", "content": ANSWER}
                    finish = "stop"
                else:
                    message = {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "call_interop",
                                "type": "function",
                                "function": {"name": "memory_search", "arguments": json.dumps({"query": "Skerry lighthouse"})},
                            }
                        ],
                    }
                    finish = "tool_calls"
                out = json.dumps(
                    {"id": "chatcmpl-interop", "object": "chat.completion", "model": body.get("model"),
                     "choices": [{"index": 0, "finish_reason": finish, "message": message}]}
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def snapshot(self) -> list[dict[str, Any]]:
        with self.lock:
            return list(self.requests)


def make_home(llm_url: str, extra: str = "") -> tuple[str, str]:
    """A scratch dir (under TMPDIR, so run.sh's cleanup finds its daemon) and its home."""
    scratch = tempfile.mkdtemp(prefix="oh-agents-")
    home = os.path.join(scratch, "home")
    os.mkdir(home)
    with open(os.path.join(home, "config.toml"), "w", encoding="utf-8") as f:
        f.write(
            f'{extra}[llm]\nprovider = "openai"\nbase_url = "{llm_url}/v1"\nmodel = "interop-model"\n'
            f'api_key_env = "{KEY_VAR}"\n'
        )
    return scratch, home


def params(bin_dir: str, home: str) -> StdioServerParameters:
    env = {"OPENHUMAN_HOME": home, "PATH": os.environ.get("PATH", "/usr/bin:/bin"), KEY_VAR: KEY}
    return StdioServerParameters(command=os.path.join(bin_dir, "openhuman-mcp-shim"), args=[], env=env)


def stop_daemon(bin_dir: str, home: str) -> None:
    try:
        subprocess.run(
            [os.path.join(bin_dir, "openhumand-mcp"), "stop"],
            env={**os.environ, "OPENHUMAN_HOME": home},
            capture_output=True,
            timeout=15,
        )
    except subprocess.TimeoutExpired:
        pass


async def check(name: str, fn: Any, *args: Any) -> bool:
    try:
        with anyio.fail_after(CHECK_TIMEOUT):
            await fn(*args)
        report(name, True)
        return True
    except TimeoutError:
        report(name, False, f"no answer within {CHECK_TIMEOUT:.0f} s")
    except Exception as e:  # noqa: BLE001 - every failure is a finding
        if os.environ.get("OPENHUMAN_INTEROP_DEBUG"):
            traceback.print_exc()
        report(name, False, f"{type(e).__name__}: {e}")
    return False


async def run_and_cancel(bin_dir: str, fake: FakeLLM, errlog: Any) -> None:
    from mcp.client.client import Client

    scratch, home = make_home(fake.url)
    try:
        with anyio.fail_after(CONNECT_TIMEOUT + 4 * CHECK_TIMEOUT):
            async with Client(stdio_client(params(bin_dir, home), errlog=errlog)) as client:
                note(f"connected, protocol {client.session.protocol_version}")
                progress: list[tuple[float, float | None, str | None]] = []

                async def on_progress(p: float, total: float | None, message: str | None) -> None:
                    progress.append((p, total, message))

                async def tools_listed() -> None:
                    names = [t["name"] for t in dump(await client.list_tools())["tools"]]
                    expect("agent.run_subagent" in names, f"agent.run_subagent not listed: {names}")

                await check("agent.run_subagent is listed when an LLM is configured", tools_listed)

                result: dict[str, Any] = {}

                async def run() -> None:
                    stored = dump(await client.call_tool("memory.store", {"title": "Skerry Rock", "content": NOTE}))
                    expect(not stored.get("isError"), f"memory.store failed: {stored}")
                    res = dump(
                        await client.call_tool(
                            "agent.run_subagent",
                            {"agent_id": "planner", "prompt": "Who keeps the Skerry Rock lighthouse?"},
                            progress_callback=on_progress,
                        )
                    )
                    result.update(res)
                    expect(not res.get("isError"), f"isError: {res.get('content')}")
                    sc = res.get("structuredContent") or {}
                    expect(sc.get("response") == ANSWER, f"response {sc.get('response')!r}")
                    expect(res["content"][0].get("text") == ANSWER, f"content[0] {res['content'][0]!r}")
                    steps = sc.get("steps") or []
                    expect(
                        len(steps) == 1 and steps[0].get("tool") == "memory.search" and steps[0].get("ok") is True,
                        f"steps {steps}",
                    )
                    expect(str(sc.get("session", "")).startswith("mcp:planner:"), f"session {sc.get('session')!r}")

                await check("a subagent calls memory.search in its loop and returns its answer", run)

                async def progress_arrived() -> None:
                    expect(len(progress) >= 2, f"{len(progress)} progress notifications: {progress}")
                    values = [p for p, _, _ in progress]
                    expect(values == sorted(values) and len(set(values)) == len(values), f"not increasing: {values}")
                    expect(any("memory.search" in (m or "") for _, _, m in progress), f"no tool step in {progress}")

                await check("progress notifications arrive per step", progress_arrived)

                async def upstream_saw_the_loop() -> None:
                    reqs = fake.snapshot()
                    expect(len(reqs) == 2, f"{len(reqs)} LLM requests")
                    first, second = reqs
                    expect(first["path"] == "/v1/chat/completions", f"path {first['path']}")
                    auth = {k.lower(): v for k, v in first["headers"].items()}.get("authorization")
                    expect(auth == f"Bearer {KEY}", "missing or wrong Authorization header")
                    body = first["body"]
                    expect(body.get("model") == "interop-model", f"model {body.get('model')!r}")
                    names = [t["function"]["name"] for t in body.get("tools", [])]
                    expect("memory_search" in names, f"tools offered: {names}")
                    expect(body["messages"][0]["role"] == "system", "no system prompt first")
                    tool_msgs = [m for m in second["body"]["messages"] if m.get("role") == "tool"]
                    expect(len(tool_msgs) == 1 and tool_msgs[0].get("tool_call_id") == "call_interop", f"{tool_msgs}")
                    expect("Bram Olsen" in tool_msgs[0].get("content", ""), "the tool result lacks the stored note")

                await check("the LLM got the agent prompt, its tools and the memory.search result", upstream_saw_the_loop)

                async def cancel_closes_upstream() -> None:
                    scope_box: dict[str, anyio.CancelScope] = {}

                    async def hanging_run() -> None:
                        with anyio.CancelScope() as cs:
                            scope_box["scope"] = cs
                            await client.call_tool("agent.run_subagent", {"agent_id": "planner", "prompt": "HANG please"})

                    async with anyio.create_task_group() as tg:
                        tg.start_soon(hanging_run)
                        while not fake.hang_started.is_set():
                            await anyio.sleep(0.02)
                        scope_box["scope"].cancel()
                    started = time.monotonic()
                    while not fake.hung_up.is_set():
                        await anyio.sleep(0.02)
                    note(f"upstream connection closed {time.monotonic() - started:.2f} s after the cancel")

                await check("cancelling a run closes the upstream LLM request", cancel_closes_upstream)

                async def session_goes_on() -> None:
                    names = [t["name"] for t in dump(await client.list_tools())["tools"]]
                    expect("agent.run_subagent" in names, "tools/list after the cancel")

                await check("the session goes on after the cancel", session_goes_on)
    finally:
        stop_daemon(bin_dir, home)
        shutil.rmtree(scratch, ignore_errors=True)


async def readonly_refuses(bin_dir: str, fake: FakeLLM, errlog: Any) -> None:
    from mcp.client.client import Client

    scratch, home = make_home(fake.url, '[autonomy]\nlevel = "readonly"\n')
    before = len(fake.snapshot())
    try:
        with anyio.fail_after(CONNECT_TIMEOUT + CHECK_TIMEOUT):
            async with Client(stdio_client(params(bin_dir, home), errlog=errlog)) as client:

                async def refused() -> None:
                    try:
                        res = dump(await client.call_tool("agent.run_subagent", {"agent_id": "planner", "prompt": "hi"}))
                    except MCPError as e:
                        expect(e.error.code == -32602, f"code {e.error.code}")
                        expect(e.error.message.startswith("[policy-blocked]"), f"message {e.error.message!r}")
                        expect(len(fake.snapshot()) == before, "the LLM was called despite the policy")
                        return
                    raise AssertionError(f"the run was not refused: {res}")

                await check("readonly policy refuses agent.run_subagent with -32602 [policy-blocked]", refused)
    finally:
        stop_daemon(bin_dir, home)
        shutil.rmtree(scratch, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin-dir", default=os.environ.get("OPENHUMAN_BIN_DIR", "target/debug"))
    opts = ap.parse_args()
    bin_dir = os.path.abspath(opts.bin_dir)
    if SDK_MAJOR < 2:
        print(f"not ok - py-agents: needs the mcp 2.x SDK, found {SDK_VERSION}", flush=True)
        return 1
    for exe in ("openhuman-mcp-shim", "openhumand-mcp"):
        if not os.access(os.path.join(bin_dir, exe), os.X_OK):
            print(f"not ok - py-agents: {exe} not found in the bin dir (build first)", flush=True)
            return 1
    note(f"python mcp {SDK_VERSION}")
    fake = FakeLLM()
    errlog_dir = tempfile.mkdtemp(prefix="oh-agents-log-")
    errlog_path = os.path.join(errlog_dir, "server-stderr.log")
    try:
        with open(errlog_path, "w") as errlog:
            for case in (run_and_cancel, readonly_refuses):
                try:
                    anyio.run(case, bin_dir, fake, errlog)
                except BaseException as e:  # noqa: BLE001 - a case that dies is a failure, not a crash
                    if isinstance(e, KeyboardInterrupt):
                        raise
                    report(f"{case.__name__} completes", False, f"{type(e).__name__}: {e}")
        if tally.failures:
            with open(errlog_path, encoding="utf-8", errors="replace") as f:
                tail = f.readlines()[-15:]
            if tail:
                note("server stderr tail:\n" + "".join("#   " + line for line in tail))
    finally:
        fake.server.shutdown()
        shutil.rmtree(errlog_dir, ignore_errors=True)
    return tally.summary("py-agents")


if __name__ == "__main__":
    sys.exit(main())
