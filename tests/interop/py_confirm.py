#!/usr/bin/env python3
"""Interop test: confirmations through the official Python MCP SDK, as a client of the shim.

    py2/bin/python tests/interop/py_confirm.py --bin-dir target/debug

The client declares elicitation (its `elicitation_callback`) and answers each question from a
script: `memory.forget` asks before it deletes (decline, cancel, accept), and a `memory.store`
whose text holds something that looks like an API key asks whether to store it redacted, as is,
or not at all. Eras: with the 2.x SDK the handshake (`Client(mode="legacy")`: the daemon sends
`elicitation/create` through the shim) and 2026-07-28 (`Client(mode="2026-07-28")`: the daemon
answers `input_required` and the SDK retries with the answer); with the 1.x SDK the handshake
(`ClientSession`). A client without a callback is never asked: its forget acts at once and its
secret is stored redacted. Every answer is then read back from `openhumand-mcp audit --json`,
which must never hold the secret.

Prints `ok - <name>` / `not ok - <name>: <reason>` per check, `# ...` diagnostics; exit 1 on any
failure.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator

import anyio

from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client

from interop_common import (CHECK_TIMEOUT, CONNECT_TIMEOUT, SDK_MAJOR, SDK_VERSION, describe, dump, expect,
                             note, report, tally)

if SDK_MAJOR >= 2:
    from mcp.client.client import Client

SECRET = "sk-" + "Zx9" * 8 + "Q1w2E3"


class Answers:
    """The elicitation callback: answers questions in order from `queue`, recording each."""

    def __init__(self) -> None:
        self.queue: list[dict[str, Any]] = []
        self.asked: list[str] = []

    async def __call__(self, context: Any, params: Any) -> Any:
        self.asked.append(getattr(params, "message", ""))
        if not self.queue:
            return types.ErrorData(code=-32603, message="the test had no answer ready")
        answer = self.queue.pop(0)
        return types.ElicitResult(action=answer["action"], content=answer.get("content"))


@asynccontextmanager
async def connect(mode: str, params: StdioServerParameters, answers: Answers | None, errlog: Any
                  ) -> AsyncIterator[Any]:
    callback = {"elicitation_callback": answers} if answers else {}
    if mode == "session":
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write, **callback) as session:
                await session.initialize()
                yield session
        return
    async with Client(stdio_client(params, errlog=errlog), mode=mode, **callback) as client:
        yield client


def tool_text(res: dict[str, Any]) -> str:
    return " ".join(c.get("text", "") for c in res.get("content", []))


async def call(target: Any, name: str, args: dict[str, Any]) -> dict[str, Any]:
    with anyio.fail_after(CHECK_TIMEOUT):
        return dump(await target.call_tool(name, args))


async def store(target: Any, title: str, content: str) -> dict[str, Any]:
    return await call(target, "memory.store", {"title": title, "content": content})


def audit_rows(daemon: str, home: str) -> list[dict[str, Any]]:
    out = subprocess.run([daemon, "audit", "--json", "--limit", "100"], env={**os.environ, "OPENHUMAN_HOME": home},
                         capture_output=True, text=True, timeout=30)
    expect(out.returncode == 0, f"audit --json failed: {out.stderr[-300:]}")
    expect(SECRET not in out.stdout, "the secret is in the audit log")
    # One JSON object per line.
    return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]


async def asked_case(label: str, mode: str, params: StdioServerParameters, daemon: str, home: str,
                     errlog: Any) -> None:
    answers = Answers()
    async with connect(mode, params, answers, errlog) as target:
        doc = await store(target, f"plan {mode}", "Meet on Tuesday about the roadmap.")
        doc_id = doc["structuredContent"]["id"]
        answers.queue = [{"action": "decline"}]
        res = await call(target, "memory.forget", {"ids": [doc_id]})
        report(f"{label}: forget asks first; declining deletes nothing",
               res.get("isError") is True and "declined" in tool_text(res) and len(answers.asked) == 1,
               f"{res} asked={answers.asked}")
        answers.queue = [{"action": "cancel"}]
        res = await call(target, "memory.forget", {"ids": [doc_id]})
        report(f"{label}: cancelling deletes nothing", res.get("isError") is True and "cancelled" in tool_text(res),
               str(res))
        answers.queue = [{"action": "accept", "content": {"confirm": True}}]
        res = await call(target, "memory.forget", {"ids": [doc_id]})
        deleted = res.get("structuredContent", {}).get("deleted", [])
        report(f"{label}: accepting deletes", res.get("isError") is not True and doc_id in deleted, str(res))
        report(f"{label}: the question names what it deletes", doc_id in (answers.asked[-1] if answers.asked else ""),
               str(answers.asked[-1:]))

        answers.queue = [{"action": "accept", "content": {"choice": "redact"}}]
        res = await store(target, f"key redacted {mode}", f"the deploy key is {SECRET} for now")
        chunk = res.get("structuredContent", {}).get("chunk_ids", [None])[0]
        read = await call(target, "tree.read_chunk", {"chunk_id": chunk}) if chunk else {}
        stored = json.dumps(read)
        report(f"{label}: a secret asks; `redact` stores it redacted",
               res.get("isError") is not True and SECRET not in stored and "[redacted]" in stored, stored[:300])
        answers.queue = [{"action": "accept", "content": {"choice": "drop"}}]
        res = await store(target, f"key dropped {mode}", f"the deploy key is {SECRET}")
        report(f"{label}: `drop` writes nothing", res.get("isError") is True and "wrote nothing" in tool_text(res),
               str(res))
        answers.queue = [{"action": "accept", "content": {"choice": "store"}}]
        res = await store(target, f"key kept {mode}", f"the deploy key is {SECRET}")
        chunk = res.get("structuredContent", {}).get("chunk_ids", [None])[0]
        read = await call(target, "tree.read_chunk", {"chunk_id": chunk}) if chunk else {}
        report(f"{label}: `store` keeps it as sent", SECRET in json.dumps(read), json.dumps(read)[:200])
    rows = audit_rows(daemon, home)
    forgets = [r for r in rows if r.get("tool") == "memory.forget"]
    summaries = json.dumps(forgets)
    report(f"{label}: the audit has every answer, and no secret",
           len(forgets) == 3 and "declined" in summaries and "cancelled" in summaries and "accepted" in summaries,
           summaries[:600])
    secrets = json.dumps([r for r in rows if r.get("tool") == "memory.store"])
    report(f"{label}: the audit says what the user chose for each secret",
           all(w in secrets for w in ("redacted", "stored_as_is", "drop")) and '"user"' in secrets, secrets[:600])


async def unasked_case(label: str, mode: str, params: StdioServerParameters, daemon: str, home: str,
                       errlog: Any) -> None:
    async with connect(mode, params, None, errlog) as target:
        doc = await store(target, "plan plain", "Nothing secret here.")
        doc_id = doc["structuredContent"]["id"]
        res = await call(target, "memory.forget", {"ids": [doc_id]})
        report(f"{label}: without elicitation forget acts as before",
               doc_id in res.get("structuredContent", {}).get("deleted", []), str(res))
        res = await store(target, "key plain", f"the deploy key is {SECRET}")
        chunk = res.get("structuredContent", {}).get("chunk_ids", [None])[0]
        read = json.dumps(await call(target, "tree.read_chunk", {"chunk_id": chunk})) if chunk else ""
        report(f"{label}: without elicitation a secret is stored redacted", SECRET not in read and "[redacted]" in read,
               read[:300])


async def run_case(label: str, mode: str, bin_dir: str, asked: bool) -> None:
    daemon = os.path.join(bin_dir, "openhumand-mcp")
    scratch = tempfile.mkdtemp(prefix="openhuman-confirm-")
    home = os.path.join(scratch, "home")
    os.mkdir(home)
    env = {"OPENHUMAN_HOME": home, "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    params = StdioServerParameters(command=os.path.join(bin_dir, "openhuman-mcp-shim"), args=[], env=env)
    try:
        with open(os.path.join(scratch, "stderr.log"), "w") as errlog, anyio.fail_after(CONNECT_TIMEOUT + 20 * CHECK_TIMEOUT):
            if asked:
                await asked_case(label, mode, params, daemon, home, errlog)
            else:
                await unasked_case(label, mode, params, daemon, home, errlog)
    except BaseException as e:  # noqa: BLE001
        if isinstance(e, KeyboardInterrupt):
            raise
        report(f"{label}: ran to the end", False, describe(e))
    finally:
        subprocess.run([daemon, "stop"], env={**os.environ, "OPENHUMAN_HOME": home}, capture_output=True, timeout=30)
        shutil.rmtree(scratch, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin-dir", default=os.environ.get("OPENHUMAN_BIN_DIR", "target/debug"))
    opts = ap.parse_args()
    bin_dir = os.path.abspath(opts.bin_dir)
    modes = ["legacy", "2026-07-28"] if SDK_MAJOR >= 2 else ["session"]
    note(f"python mcp {SDK_VERSION}: confirmations in modes {modes}")
    for mode in modes:
        anyio.run(run_case, f"py-mcp{SDK_VERSION} confirm {mode}", mode, bin_dir, True)
    anyio.run(run_case, f"py-mcp{SDK_VERSION} confirm {modes[0]} (no elicitation)", modes[0], bin_dir, False)
    return tally.summary(f"py-mcp{SDK_VERSION} confirm")


if __name__ == "__main__":
    sys.exit(main())
