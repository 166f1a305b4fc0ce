#!/usr/bin/env python3
"""Drives an installed openhuman-mcp with the official Python MCP client (`mcp`, from the py2
venv that tests/interop/setup.sh makes), as a client application would launch it: a stdio
server started by the SDK's own `stdio_client`, with this process's environment (the test sets
OPENHUMAN_HOME to a temporary folder).

    drive.py [--expect-version V] [--expect-tools a,b,...] -- COMMAND [ARG...]

Checks, each printed as `ok - <name>` or `not ok - <name>: <reason>`:
  - initialize: a known protocol version, the server's name and version
  - tools/list: memory.store and memory.search (and every --expect-tools name) are offered
  - memory.store then memory.search: the stored document is found by a word it holds
Exit status 0 when every check passed, 1 otherwise; every step is bounded by a timeout.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

VERSIONS = {"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"}
STEP_TIMEOUT = 30.0
NEEDLE = "quillwort"

failures = 0
passes = 0


def report(name: str, problem: str | None) -> None:
    global failures, passes
    if problem is None:
        passes += 1
        print(f"ok - {name}", flush=True)
    else:
        failures += 1
        print(f"not ok - {name}: {problem}", flush=True)


def dump(model: Any) -> dict:
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)


async def drive(args: argparse.Namespace) -> None:
    params = StdioServerParameters(command=args.command[0], args=args.command[1:], env=dict(os.environ))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            with anyio.fail_after(STEP_TIMEOUT):
                init = dump(await session.initialize())
            info = init.get("serverInfo", {})
            problem = None
            if init.get("protocolVersion") not in VERSIONS:
                problem = f"protocol version {init.get('protocolVersion')!r}"
            elif info.get("name") != "openhuman-core":
                problem = f"serverInfo {info}"
            elif args.expect_version and info.get("version") != args.expect_version:
                problem = f"server version {info.get('version')!r}, want {args.expect_version!r}"
            report("initialize", problem)

            with anyio.fail_after(STEP_TIMEOUT):
                tools = [t["name"] for t in dump(await session.list_tools()).get("tools", [])]
            want = ["memory.store", "memory.search"] + [t for t in args.expect_tools.split(",") if t]
            missing = [t for t in want if t not in tools]
            report(f"tools/list offers {', '.join(want)}", f"missing {missing} from {tools}" if missing else None)

            with anyio.fail_after(STEP_TIMEOUT):
                stored = dump(await session.call_tool("memory.store", {
                    "title": "Packaging round trip",
                    "content": f"The {NEEDLE} grows at the edge of the tarn.",
                }))
            doc = (stored.get("structuredContent") or {}).get("id")
            bad = stored.get("isError") or not isinstance(doc, str)
            report("memory.store saves a document", f"{stored}" if bad else None)

            with anyio.fail_after(STEP_TIMEOUT):
                found = dump(await session.call_tool("memory.search", {"query": NEEDLE}))
            hits = (found.get("structuredContent") or {}).get("hits") or []
            sources = [h.get("source_id") for h in hits]
            report("memory.search finds the stored document",
                   None if doc in sources and not found.get("isError") else f"{doc!r} not in {sources}: {found}")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--expect-version", default="")
    parser.add_argument("--expect-tools", default="")
    parser.add_argument("command", nargs="+")
    args = parser.parse_args()
    try:
        anyio.run(drive, args)
    except BaseException as e:  # a crash is a failed check, with its reason
        report("the session ran to the end", f"{type(e).__name__}: {e}")
        traceback.print_exc(file=sys.stderr)
    print(f"{passes} passed, {failures} failed", flush=True)
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
