"""The OAuth checks of the integration test `oauth`, against a daemon that serves HTTP as an OAuth
resource server for the authorization server `as.mjs` (both started by the Rust test on loopback).

    python flow.py --url http://127.0.0.1:PORT/mcp --issuer http://127.0.0.1:AS \
        --static-token TOKEN --tokens-out FILE

1. Discovery as a client meets it: 401 with `WWW-Authenticate` naming the resource metadata and
   the scopes, and the metadata document (RFC 9728) at both well-known paths.
2. The official Python SDK's `OAuthClientProvider`, browser-less: from the 401 to the metadata,
   the authorization server (authorization code with PKCE, `resource` = this server), the token,
   then `initialize`, `tools/list` and `tools/call` (a write and a search), in a handshake
   session and again in the SDK's default mode.
3. Tokens the server must refuse with 401 `invalid_token` and the metadata URL: expired, another
   audience, another issuer, a changed payload, a changed signature, `alg: none`, HMAC signed with
   the issuer's public key, and no token at all reaching `/rpc` with an OAuth token.
4. Scopes: a read-only token lists and searches but cannot write (403 `insufficient_scope`,
   `scope="<act scope>"`); a token without the read scope is refused everything (403).
5. Keys: an ES256 token works as well as an RS256 one; a key the issuer publishes later (a
   rotation) is fetched for its new `kid`; a flood of unknown `kid`s fetches the keys at most
   three times.
6. A session stays with its caller: another subject's token gets 404 for it. The static token
   still works beside OAuth.

Every access token it used is written to --tokens-out, one a line, so the test can check the
daemon's logs never show one. Prints `ok - <name>` / `not ok - <name>: <why>` and finally
`N passed, M failed`; exits 1 when anything failed.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import hmac
import json
import sys
import time
import traceback
from typing import Any
from urllib.parse import parse_qs, urlparse

import httpx2
from mcp import ClientSession
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

try:
    from mcp.shared.auth import AuthorizationCodeResult
except ImportError:  # 1.x callbacks return a (code, state) tuple
    AuthorizationCodeResult = None  # type: ignore[assignment,misc]

try:
    from mcp.client.client import Client
except ImportError:  # 1.x has no Client
    Client = None  # type: ignore[assignment,misc]

READ = "openhuman:read"
ACT = "openhuman:act"
CLIENT_ID = "oauth-flow-test"
REDIRECT = "http://127.0.0.1:9/callback"
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}

passed = 0
failed = 0
used_tokens: list[str] = []


def report(name: str, error: str | None) -> None:
    global passed, failed
    if error is None:
        passed += 1
        print(f"ok - {name}", flush=True)
    else:
        failed += 1
        print(f"not ok - {name}: {error}", flush=True)


def expect(cond: bool, why: str) -> None:
    if not cond:
        raise AssertionError(why)


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def claims_of(token: str) -> dict[str, Any]:
    return json.loads(unb64(token.split(".")[1]))


def init_body(client: str = "oauth-raw") -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": client, "version": "1"}},
    }


class Memory:
    """Token storage holding the pre-registered client (the mock server has no registration)."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client = OAuthClientInformationFull(
            client_id=CLIENT_ID, redirect_uris=[REDIRECT], token_endpoint_auth_method="none",
            grant_types=["authorization_code", "refresh_token"], response_types=["code"],
        )

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens
        used_tokens.append(tokens.access_token)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, info: OAuthClientInformationFull) -> None:
        self.client = info


class Browser:
    """Stands in for the user's browser: follows the authorization URL to its redirect and hands
    the code and state to the SDK's callback."""

    def __init__(self) -> None:
        self.visits: list[str] = []
        self.result: tuple[str, str | None] | None = None

    async def redirect(self, url: str) -> None:
        self.visits.append(url)
        async with httpx2.AsyncClient(follow_redirects=False, timeout=10) as http:
            resp = await http.get(url)
        expect(resp.status_code in (302, 303), f"/authorize answered {resp.status_code}")
        query = parse_qs(urlparse(resp.headers["location"]).query)
        self.result = (query["code"][0], query.get("state", [None])[0])

    async def callback(self) -> Any:
        expect(self.result is not None, "the callback came before the redirect")
        code, state = self.result  # type: ignore[misc]
        if AuthorizationCodeResult is None:
            return code, state
        return AuthorizationCodeResult(code=code, state=state)


class Checks:
    def __init__(self, url: str, issuer: str, static_token: str) -> None:
        self.url = url
        self.issuer = issuer
        self.static = static_token
        parsed = urlparse(url)
        self.origin = f"{parsed.scheme}://{parsed.netloc}"
        self.metadata_url = f"{self.origin}/.well-known/oauth-protected-resource{parsed.path}"
        self.http = httpx2.AsyncClient(timeout=30)

    async def close(self) -> None:
        await self.http.aclose()

    async def issue(self, claims: dict[str, Any] | None = None, drop: list[str] | None = None,
                    kid: str | None = None, expires_in: int = 600) -> str:
        """A token from the authorization server's test route, by default a good one."""
        base = {"aud": self.url, "sub": "alice", "client_id": "raw-client", "scope": f"{READ} {ACT}"}
        base.update(claims or {})
        ask: dict[str, Any] = {"claims": base, "drop": drop or [], "expires_in": expires_in}
        if kid:
            ask["kid"] = kid
        resp = await self.http.post(f"{self.issuer}/test/token", json=ask)
        resp.raise_for_status()
        token = resp.json()["access_token"]
        used_tokens.append(token)
        return token

    async def post(self, token: str | None, body: dict[str, Any], session: str | None = None,
                   path: str | None = None) -> httpx2.Response:
        headers = dict(HEADERS)
        if token:
            headers["Authorization"] = f"Bearer {token}"
        if session:
            headers["Mcp-Session-Id"] = session
        return await self.http.post(path or self.url, headers=headers, json=body)

    async def session(self, token: str) -> str:
        resp = await self.post(token, init_body())
        expect(resp.status_code == 200, f"initialize answered {resp.status_code}: {resp.text}")
        sid = resp.headers["mcp-session-id"]
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        resp = await self.post(token, note, session=sid)
        expect(resp.status_code == 202, f"initialized answered {resp.status_code}")
        return sid

    async def call(self, token: str, sid: str, name: str, arguments: dict[str, Any]) -> httpx2.Response:
        body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
        return await self.post(token, body, session=sid)

    def refused_401(self, resp: httpx2.Response, why: str) -> None:
        expect(resp.status_code == 401, f"{why}: answered {resp.status_code}: {resp.text[:300]}")
        challenge = resp.headers.get("www-authenticate", "")
        expect(challenge.startswith("Bearer "), f"{why}: challenge {challenge!r}")
        expect('error="invalid_token"' in challenge, f"{why}: no invalid_token in {challenge!r}")
        expect(f'resource_metadata="{self.metadata_url}"' in challenge, f"{why}: no metadata URL in {challenge!r}")

    # 1 -----------------------------------------------------------------------------------------

    async def discovery(self) -> None:
        resp = await self.post(None, init_body())
        expect(resp.status_code == 401, f"no token: {resp.status_code}")
        challenge = resp.headers.get("www-authenticate", "")
        expect(f'resource_metadata="{self.metadata_url}"' in challenge, challenge)
        expect(f'scope="{READ} {ACT}"' in challenge, challenge)
        expect("error=" not in challenge, f"no error code without a token: {challenge}")
        for where in (self.metadata_url, f"{self.origin}/.well-known/oauth-protected-resource"):
            doc = (await self.http.get(where)).json()
            expect(doc.get("resource") == self.url, f"{where}: resource {doc.get('resource')!r}")
            expect(doc.get("authorization_servers") == [self.issuer], f"{where}: {doc}")
            expect(set(doc.get("scopes_supported", [])) == {READ, ACT}, f"{where}: {doc}")
            expect(doc.get("bearer_methods_supported") == ["header"], f"{where}: {doc}")

    # 2 -----------------------------------------------------------------------------------------

    async def sdk_flow(self) -> None:
        storage, browser = Memory(), Browser()
        provider = OAuthClientProvider(
            server_url=self.url,
            client_metadata=OAuthClientMetadata(
                client_name="openhuman oauth test", redirect_uris=[REDIRECT], token_endpoint_auth_method="none",
                grant_types=["authorization_code", "refresh_token"], response_types=["code"],
            ),
            storage=storage,
            redirect_handler=browser.redirect,
            callback_handler=browser.callback,
        )
        async with create_mcp_http_client(auth=provider) as http:
            async with streamable_http_client(self.url, http_client=http) as streams:
                async with ClientSession(streams[0], streams[1]) as session:
                    await session.initialize()
                    tools = await session.list_tools()
                    names = {t.name for t in tools.tools}
                    expect({"memory.store", "memory.search"} <= names, f"tools/list: {sorted(names)[:8]}…")
                    stored = await session.call_tool(
                        "memory.store", {"title": "oauth note", "content": "the heron flies at dawn over the weir"}
                    )
                    expect(not stored.isError if hasattr(stored, "isError") else not stored.is_error,
                           f"memory.store: {stored.content}")
                    found = await session.call_tool("memory.search", {"query": "heron weir"})
                    text = json.dumps([c.model_dump() for c in found.content])
                    expect("heron" in text, f"memory.search did not find the note: {text[:300]}")
        expect(len(browser.visits) == 1, f"the authorization URL was visited {len(browser.visits)} times")
        asked = parse_qs(urlparse(browser.visits[0]).query)
        expect(asked.get("resource") == [self.url], f"resource asked for: {asked.get('resource')}")
        expect(asked.get("code_challenge_method") == ["S256"], f"PKCE: {asked.get('code_challenge_method')}")
        expect(set(asked.get("scope", [""])[0].split()) == {READ, ACT}, f"scope asked for: {asked.get('scope')}")
        claims = claims_of(storage.tokens.access_token)  # type: ignore[union-attr]
        expect(claims.get("aud") == self.url and claims.get("client_id") == CLIENT_ID, f"token claims: {claims}")
        # The SDK's default mode (2026-07-28 when the server speaks it), with the stored token:
        # no second authorization.
        if Client is not None:
            async with create_mcp_http_client(auth=provider) as http:
                async with Client(streamable_http_client(self.url, http_client=http)) as client:
                    tools = await client.list_tools()
                    expect(any(t.name == "memory.search" for t in tools.tools), "tools/list (default mode)")
            expect(len(browser.visits) == 1, "the stored token was not reused")

    # 3 -----------------------------------------------------------------------------------------

    async def forged(self) -> None:
        now = int(time.time())
        cases = {
            "expired": await self.issue({"exp": now - 3600, "iat": now - 7200, "nbf": now - 7200}),
            "another audience": await self.issue({"aud": "http://127.0.0.1:1/mcp"}),
            "no audience": await self.issue(drop=["aud"]),
            "another issuer": await self.issue({"iss": "http://evil.example"}),
            "not yet valid": await self.issue({"nbf": now + 3600}),
        }
        good = await self.issue(kid="rs-1")
        head, body, sig = good.split(".")
        more = dict(claims_of(good), sub="mallory")
        cases["changed payload"] = f"{head}.{b64(json.dumps(more).encode())}.{sig}"
        flipped = sig[:-2] + ("A" if sig[-2] != "A" else "B") + sig[-1]
        cases["changed signature"] = f"{head}.{body}.{flipped}"
        cases["alg none"] = f"{b64(json.dumps({'alg': 'none', 'typ': 'JWT'}).encode())}.{body}."
        jwks = (await self.http.get(f"{self.issuer}/jwks")).json()
        rsa = next(k for k in jwks["keys"] if k["kty"] == "RSA")
        hs_head = b64(json.dumps({"alg": "HS256", "typ": "JWT", "kid": rsa["kid"]}).encode())
        mac = hmac.new(json.dumps(rsa).encode(), f"{hs_head}.{body}".encode(), hashlib.sha256).digest()
        cases["HMAC with the public key"] = f"{hs_head}.{body}.{b64(mac)}"
        cases["not a JWT"] = "opaque-token-value"
        used_tokens.extend(cases.values())
        for why, token in cases.items():
            self.refused_401(await self.post(token, init_body()), why)
        # The same good token passes, so the refusals above were for what was changed.
        resp = await self.post(good, init_body())
        expect(resp.status_code == 200, f"the untouched token: {resp.status_code} {resp.text[:200]}")
        resp = await self.post(good, {"jsonrpc": "2.0", "id": 1, "method": "openhuman.status"},
                               path=f"{self.origin}/rpc")
        expect(resp.status_code == 403, f"/rpc with an OAuth token: {resp.status_code}")

    # 4 -----------------------------------------------------------------------------------------

    async def scopes(self) -> None:
        reader = await self.issue({"scope": READ})
        sid = await self.session(reader)
        resp = await self.call(reader, sid, "memory.store", {"title": "not allowed", "content": "a read token writes"})
        expect(resp.status_code == 403, f"write with a read token: {resp.status_code} {resp.text[:300]}")
        challenge = resp.headers.get("www-authenticate", "")
        expect('error="insufficient_scope"' in challenge and f'scope="{ACT}"' in challenge, challenge)
        expect(f'resource_metadata="{self.metadata_url}"' in challenge, challenge)
        error = resp.json().get("error", {})
        expect(ACT in error.get("message", "") and "memory.store" in error.get("message", ""), f"{error}")
        resp = await self.call(reader, sid, "memory.search", {"query": "heron"})
        expect(resp.status_code == 200 and "error" not in resp.json(), f"search with a read token: {resp.text[:300]}")
        resp = await self.post(reader, {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}, session=sid)
        expect(resp.status_code == 200 and resp.json()["result"]["tools"], "tools/list with a read token")
        nothing = await self.issue({"scope": "profile"})
        resp = await self.post(nothing, init_body())
        expect(resp.status_code == 403, f"no read scope: {resp.status_code}")
        challenge = resp.headers.get("www-authenticate", "")
        expect('error="insufficient_scope"' in challenge and f'scope="{READ}"' in challenge, challenge)

    # 5 -----------------------------------------------------------------------------------------

    async def keys(self) -> None:
        for kid in ("es-1", "rs-1"):
            token = await self.issue(kid=kid)
            expect(json.loads(unb64(token.split(".")[0]))["kid"] == kid, "the test route ignored kid")
            resp = await self.post(token, init_body())
            expect(resp.status_code == 200, f"{kid} token: {resp.status_code} {resp.text[:200]}")
        before = (await self.http.get(f"{self.issuer}/test/stats")).json()["jwks"]
        rotated = (await self.http.post(f"{self.issuer}/test/rotate")).json()["kid"]
        token = await self.issue(kid=rotated)
        resp = await self.post(token, init_body())
        expect(resp.status_code == 200, f"a token of the rotated key: {resp.status_code} {resp.text[:200]}")
        good = await self.issue(kid="rs-1")
        head, body, sig = good.split(".")
        for n in range(12):
            fake = b64(json.dumps({"alg": "RS256", "typ": "JWT", "kid": f"forged-{n}"}).encode())
            resp = await self.post(f"{fake}.{body}.{sig}", init_body())
            expect(resp.status_code == 401, f"unknown kid {n}: {resp.status_code}")
        after = (await self.http.get(f"{self.issuer}/test/stats")).json()["jwks"]
        expect(1 <= after - before <= 3, f"the keys were fetched {after - before} times for a rotation and 12 forged kids")

    # 6 -----------------------------------------------------------------------------------------

    async def sessions(self) -> None:
        alice = await self.issue({"sub": "alice"})
        sid = await self.session(alice)
        mallory = await self.issue({"sub": "mallory"})
        resp = await self.post(mallory, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, session=sid)
        expect(resp.status_code == 404, f"another subject on alice's session: {resp.status_code}")
        resp = await self.post(self.static, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, session=sid)
        expect(resp.status_code == 404, f"the static token on alice's session: {resp.status_code}")
        again = await self.issue({"sub": "alice", "scope": f"{READ} {ACT}"})
        resp = await self.post(again, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, session=sid)
        expect(resp.status_code == 200, f"alice's new token on her session: {resp.status_code}")
        static_sid = await self.session(self.static)
        resp = await self.call(self.static, static_sid, "memory.search", {"query": "heron"})
        expect(resp.status_code == 200 and "error" not in resp.json(), f"the static token: {resp.text[:200]}")


async def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--issuer", required=True)
    ap.add_argument("--static-token", required=True)
    ap.add_argument("--tokens-out", required=True)
    args = ap.parse_args()
    checks = Checks(args.url, args.issuer, args.static_token)
    try:
        for name, run in [
            ("discovery: 401 names the resource metadata and scopes; metadata at both well-known paths", checks.discovery),
            ("the Python SDK's OAuth client: 401 → metadata → authorization server → token → tools/list and tools/call", checks.sdk_flow),
            ("forged, expired, foreign and unsigned tokens get 401 invalid_token with the metadata URL", checks.forged),
            ("a read-scope token cannot write (403 insufficient_scope); no read scope, no access", checks.scopes),
            ("ES256 and RS256 keys; a rotated key is fetched; forged kids fetch the keys at most 3 times", checks.keys),
            ("a session stays with its caller; the static token works beside OAuth", checks.sessions),
        ]:
            try:
                await asyncio.wait_for(run(), timeout=120)
                report(name, None)
            except BaseException as e:  # noqa: BLE001 - every failure is reported, then the next check runs
                detail = "".join(traceback.format_exception_only(type(e), e)).strip()
                if isinstance(e, BaseExceptionGroup):
                    detail += " | " + " | ".join(repr(x) for x in e.exceptions)
                report(name, detail[:2000])
    finally:
        await checks.close()
        with open(args.tokens_out, "w") as out:
            out.write("\n".join(used_tokens) + "\n")
    print(f"{passed} passed, {failed} failed", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
