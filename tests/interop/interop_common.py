"""What the Python interop drivers share: the SDK's version and error type, the versions and
resources every server run must show, the timeouts, the `ok - ` / `not ok - ` reporting with
its tally, the change-notification check (a store heard by a subscriber) and the prompt and
completion checks. Imported by py_client.py, py_http_client.py and py_agents.py, which sit beside it
(Python puts a script's own directory first on `sys.path`).
"""

from __future__ import annotations

import importlib.metadata
import os
import warnings
from typing import Any, Callable

import json

import anyio

try:  # 2.x
    from mcp.shared.exceptions import MCPError as SdkError
except ImportError:  # 1.x
    from mcp.shared.exceptions import McpError as SdkError

SDK_VERSION = importlib.metadata.version("mcp")
SDK_MAJOR = int(SDK_VERSION.split(".")[0])

try:  # builtin from Python 3.11; anyio brings the backport on 3.10
    _EXCEPTION_GROUPS: tuple[type, ...] = (BaseExceptionGroup,)
except NameError:
    try:
        from exceptiongroup import BaseExceptionGroup as _BEG

        _EXCEPTION_GROUPS = (_BEG,)
    except ImportError:
        _EXCEPTION_GROUPS = ()

MODERN = "2026-07-28"
HANDSHAKE_VERSIONS = {"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"}
REQUIRED_RESOURCES = [
    "openhuman://prompts/identity",
    "openhuman://prompts/soul",
    "openhuman://prompts/user",
    "openhuman://prompts/agents/orchestrator",
]

# The 2.x client's `server/discover` probe alone may wait 10 s before it falls back.
CONNECT_TIMEOUT = float(os.environ.get("OPENHUMAN_INTEROP_CONNECT_TIMEOUT", "30"))
CHECK_TIMEOUT = 20.0
# The SDK closes the server's stdin, waits 2 s, then kills the process tree.
CLOSE_TIMEOUT = 15.0


class Tally:
    """Counts and prints check outcomes; `prefix` starts every check name."""

    def __init__(self) -> None:
        self.passes = 0
        self.failures = 0
        self.prefix = ""

    def report(self, name: str, ok: bool, reason: str = "") -> None:
        if ok:
            self.passes += 1
            print(f"ok - {self.prefix}{name}", flush=True)
        else:
            self.failures += 1
            reason = " ".join(str(reason).split()) or "failed"
            print(f"not ok - {self.prefix}{name}: {reason[:600]}", flush=True)

    def summary(self, label: str) -> int:
        """Prints `# LABEL: N passed, M failed`; the process exit status to use."""
        note(f"{label}: {self.passes} passed, {self.failures} failed")
        return 1 if self.failures else 0


tally = Tally()
report = tally.report


def note(text: str) -> None:
    print(f"# {text}", flush=True)


def dump(model: Any) -> dict[str, Any]:
    """An SDK result as the camelCase JSON dict of the wire (same for 1.x and 2.x models)."""
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)


def describe(exc: BaseException) -> str:
    if isinstance(exc, SdkError):
        err = getattr(exc, "error", None)
        if err is not None:
            return f"{type(exc).__name__} code={err.code} message={err.message!r} data={err.data!r}"
    if isinstance(exc, _EXCEPTION_GROUPS):
        return "; ".join(describe(e) for e in exc.exceptions)
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def expect(cond: bool, why: str) -> None:
    if not cond:
        raise AssertionError(why)


class Api:
    """The calls the checks make, over either the 2.x `Client` or a `ClientSession`, with the
    protocol version the connection settled on."""

    def __init__(self, target: Any, version: str | None) -> None:
        self.target = target
        self.protocol_version = version
        # URIs of `notifications/resources/updated` heard, when the driver listens for them.
        self.updates: Any = None

    async def list_tools(self) -> dict[str, Any]:
        return dump(await self.target.list_tools())

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return dump(await self.target.call_tool(name, arguments))

    async def list_resources(self) -> dict[str, Any]:
        return dump(await self.target.list_resources())

    async def read_resource(self, uri: str) -> dict[str, Any]:
        return dump(await self.target.read_resource(uri))

    async def list_prompts(self) -> dict[str, Any]:
        return dump(await self.target.list_prompts())

    async def get_prompt(self, name: str, arguments: dict[str, str]) -> dict[str, Any]:
        return dump(await self.target.get_prompt(name, arguments))

    async def complete(self, ref: Any, name: str, value: str) -> dict[str, Any]:
        return dump(await self.target.complete(ref, {"name": name, "value": value}))


def updates_handler() -> tuple[Any, Any]:
    """A `message_handler` that passes the URI of every `notifications/resources/updated` on to
    the returned receive stream (the handshake versions' change notifications)."""
    send, receive = anyio.create_memory_object_stream(256)

    async def handler(message: Any) -> None:
        root = getattr(message, "root", message)  # 1.x wraps notifications in a RootModel
        if getattr(root, "method", None) == "notifications/resources/updated":
            try:
                send.send_nowait(str(root.params.uri))
            except anyio.WouldBlock:
                pass

    return handler, receive


MEMORY_URI = "openhuman://memory"


async def store_note(api: Api, title: str) -> None:
    res = await api.call_tool("memory.store", {"title": title, "content": f"{title}: subscribers hear of this."})
    expect(not res.get("isError"), f"memory.store failed: {res.get('content')}")


async def check_subscription(api: Api) -> None:
    """Subscribe to the memory overview, store a note, hear that the overview changed: through
    `subscriptions/listen` on 2026-07-28, `resources/subscribe` on the handshake versions."""
    if api.protocol_version == MODERN:
        from mcp.client.subscriptions import ResourceUpdated

        async with api.target.listen(resource_subscriptions=[MEMORY_URI]) as sub:
            honored = list(sub.honored.resource_subscriptions or [])
            expect(honored == [MEMORY_URI], f"acknowledged {honored}, want [{MEMORY_URI}]")
            await store_note(api, "listen check")
            async for event in sub:
                if isinstance(event, ResourceUpdated) and str(event.uri) == MEMORY_URI:
                    return
        raise AssertionError("the stream ended before notifications/resources/updated")
    with warnings.catch_warnings():
        # 2.x marks the handshake-era method deprecated; it is what those versions have.
        warnings.simplefilter("ignore")
        await api.target.subscribe_resource(MEMORY_URI)
    await store_note(api, "subscribe check")
    async for uri in api.updates:
        if uri == MEMORY_URI:
            return


async def run_checks(label: str, checks: list[tuple[str, Any]], arg: Any, done: set[str],
                     on_failure: Callable[[], None] | None = None) -> None:
    """Runs each `(name, fn)` of `checks` as `await fn(arg)` within CHECK_TIMEOUT and reports it.
    Once one times out the server is taken to be stuck, and the rest are reported as not run.
    `on_failure` adds evidence after a failed check; every name reported lands in `done`."""
    hung = None
    for name, fn in checks:
        if hung:
            report(f"{label}: {name}", False, f"not run: {hung}")
        else:
            try:
                with anyio.fail_after(CHECK_TIMEOUT):
                    await fn(arg)
                report(f"{label}: {name}", True)
            except TimeoutError:
                report(f"{label}: {name}", False, f"no answer within {CHECK_TIMEOUT:.0f} s")
                hung = f"the server stopped answering ({name})"
            except Exception as e:  # noqa: BLE001 - every failure is a finding
                report(f"{label}: {name}", False, describe(e))
                if on_failure:
                    on_failure()
        done.add(name)


# The prompt and completion checks: a note stored with a rare word and a hashtag, recalled by
# the `recall_context` prompt and offered by completion.
RECALL_WORD = "Quetzalwing"
RECALL_TAG = "quetzalnotes"


def estimate_tokens(text: str) -> int:
    """The server's token estimate: whitespace-separated words x 1.3, rounded up."""
    return (len(text.split()) * 13 + 9) // 10


async def check_prompts_list(api: Api) -> None:
    prompts = {p.get("name"): p for p in (await api.list_prompts()).get("prompts", [])}
    expect("recall_context" in prompts and "agent.orchestrator" in prompts, f"got {sorted(prompts)}")
    args = {a.get("name"): a.get("required") for a in prompts["recall_context"].get("arguments", [])}
    expect(args == {"topic": True, "token_budget": False}, f"recall_context arguments {args}")


async def check_recall_prompt(api: Api) -> None:
    res = await api.call_tool("memory.store", {
        "title": "Interop field notes",
        "content": f"{RECALL_WORD} herons nest by the north pier in May. #{RECALL_TAG}",
    })
    expect(not res.get("isError"), f"memory.store failed: {res.get('content')}")
    chunk = (res.get("structuredContent") or {}).get("chunk_ids", [None])[0]
    got = await api.get_prompt("recall_context", {"topic": f"{RECALL_WORD} herons", "token_budget": "300"})
    messages = got.get("messages", [])
    expect(len(messages) == 1 and messages[0].get("role") == "user", f"messages: {json.dumps(messages)[:300]}")
    text = messages[0].get("content", {}).get("text", "")
    expect(RECALL_WORD in text, f"the stored note is not in the prompt: {text[:300]!r}")
    expect(f"[chunk:{chunk}]" in text, f"no citation [chunk:{chunk}] in {text[:300]!r}")
    expect(estimate_tokens(text) <= 300, f"{estimate_tokens(text)} tokens over the budget of 300")


async def check_prompt_missing_argument(api: Api) -> None:
    try:
        got = await api.get_prompt("recall_context", {})
    except SdkError as e:
        err = getattr(e, "error", None)
        expect(err is not None and err.code == -32602, f"want -32602, got {describe(e)}")
        expect("topic" in err.message, f"the message does not name `topic`: {err.message!r}")
        return
    raise AssertionError(f"a prompt without its required argument succeeded: {json.dumps(got)[:300]}")


async def check_completion(api: Api) -> None:
    from mcp.types import PromptReference, ResourceTemplateReference

    # After check_recall_prompt: its hashtag is a topic in memory.
    ref = PromptReference(type="ref/prompt", name="recall_context")
    done = (await api.complete(ref, "topic", RECALL_TAG[:6])).get("completion", {})
    expect(RECALL_TAG in done.get("values", []), f"topic completion: {done}")
    expect(done.get("hasMore") is False, f"hasMore: {done}")
    ids = (await api.complete(ResourceTemplateReference(type="ref/resource", uri="openhuman://memory/{id}"), "id", "")
           ).get("completion", {})
    values = ids.get("values", [])
    expect(values and len(values) <= 100 and ids.get("total", 0) >= len(values), f"memory id completion: {ids}")
    item = await api.read_resource(f"openhuman://memory/{values[0]}")
    text = (item.get("contents") or [{}])[0].get("text", "")
    expect(f"- id: `{values[0]}`" in text, f"memory item {values[0]} reads as {text[:200]!r}")
