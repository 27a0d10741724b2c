"""A scripted fake A2A agent for the client tests: plain aiohttp handlers on 127.0.0.1.

Each JSON-RPC method gets a scripted handler; every request is recorded (method, headers, body)
so tests can assert on what the client sent.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from multidict import CIMultiDictProxy

from a2a_wire.client import ClientSettings

Handler = Callable[[web.Request, dict[str, Any]], Awaitable[web.StreamResponse]]

TS = "2026-01-02T03:04:05.000Z"


def task_json(
    task_id: str = "t1", state: str = "TASK_STATE_COMPLETED", **extra: Any
) -> dict[str, Any]:
    """A Task in ProtoJSON."""
    return {"id": task_id, "contextId": "c1", "status": {"state": state, "timestamp": TS}, **extra}


def message_json(text: str = "hello", **extra: Any) -> dict[str, Any]:
    """An agent Message in ProtoJSON."""
    return {
        "messageId": "m-agent",
        "contextId": "c1",
        "role": "ROLE_AGENT",
        "parts": [{"text": text}],
        **extra,
    }


def status_update(state: str, task_id: str = "t1") -> dict[str, Any]:
    return {"statusUpdate": {"taskId": task_id, "contextId": "c1", "status": {"state": state}}}


def artifact_update(text: str, task_id: str = "t1") -> dict[str, Any]:
    artifact = {"artifactId": "a1", "parts": [{"text": text}]}
    return {"artifactUpdate": {"taskId": task_id, "contextId": "c1", "artifact": artifact}}


def card_json(base: str, interfaces: Sequence[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A minimal valid card whose JSONRPC 1.0 interface is ``{base}/rpc``."""
    if interfaces is None:
        interfaces = [
            {"url": f"{base}/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
        ]
    return {
        "name": "fake",
        "description": "a scripted fake agent",
        "supportedInterfaces": list(interfaces),
        "version": "1",
        "capabilities": {"streaming": True},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [],
    }


def sse(obj: Any) -> bytes:
    """One SSE event holding ``obj`` as compact JSON."""
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


#: Client settings for talking to a fake agent on loopback.
LOCAL = ClientSettings(allow=["127.0.0.1"])


@dataclass
class Recorded:
    method: str
    headers: CIMultiDictProxy[str]
    body: dict[str, Any]

    @property
    def params(self) -> dict[str, Any]:
        return dict(self.body.get("params") or {})


class FakeAgent:
    """An aiohttp app whose answers are scripted per JSON-RPC method."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self.card_requests: list[CIMultiDictProxy[str]] = []
        self.handlers: dict[str, Handler] = {}
        self.card_handler: Callable[[web.Request], Awaitable[web.StreamResponse]] | None = None
        self.base = ""
        #: Handlers that stall wait on this; the fixture sets it so the server can stop quickly.
        self.release = asyncio.Event()
        self.app = web.Application()
        self.app.router.add_post("/rpc", self._rpc)
        self.app.router.add_get("/.well-known/agent-card.json", self._card)

    @property
    def url(self) -> str:
        return f"{self.base}/rpc"

    async def _rpc(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append(Recorded(body.get("method", ""), request.headers, body))
        handler = self.handlers.get(body.get("method", ""))
        if handler is None:
            return web.json_response(
                {
                    "jsonrpc": "2.0",
                    "id": body.get("id"),
                    "error": {"code": -32601, "message": "nope"},
                }
            )
        return await handler(request, body)

    async def _card(self, request: web.Request) -> web.StreamResponse:
        self.card_requests.append(request.headers)
        assert self.card_handler is not None, "no card scripted"
        return await self.card_handler(request)

    # -- scripting ----------------------------------------------------------------------------

    async def stall(self, seconds: float = 5.0) -> None:
        """Stay silent until the test ends (or ``seconds`` pass)."""
        try:
            await asyncio.wait_for(self.release.wait(), seconds)
        except TimeoutError:
            pass

    def on(self, method: str, handler: Handler) -> None:
        self.handlers[method] = handler

    def reply(self, method: str, result: Any) -> None:
        async def handler(request: web.Request, body: dict[str, Any]) -> web.StreamResponse:
            return web.json_response({"jsonrpc": "2.0", "id": body["id"], "result": result})

        self.on(method, handler)

    def reply_sequence(self, method: str, results: Sequence[Any]) -> None:
        """Answer successive calls with successive results (the last one repeats)."""
        remaining = list(results)

        async def handler(request: web.Request, body: dict[str, Any]) -> web.StreamResponse:
            result = remaining.pop(0) if len(remaining) > 1 else remaining[0]
            return web.json_response({"jsonrpc": "2.0", "id": body["id"], "result": result})

        self.on(method, handler)

    def error(
        self, method: str, code: int, message: str, data: Any = None, status: int = 200
    ) -> None:
        async def handler(request: web.Request, body: dict[str, Any]) -> web.StreamResponse:
            err: dict[str, Any] = {"code": code, "message": message}
            if data is not None:
                err["data"] = data
            return web.json_response(
                {"jsonrpc": "2.0", "id": body["id"], "error": err}, status=status
            )

        self.on(method, handler)

    def stream(
        self,
        method: str,
        results: Sequence[Any],
        *,
        raw: Sequence[bytes] | None = None,
        delay: float = 0.0,
        cut: bool = False,
    ) -> None:
        """Answer with an SSE stream: one event per result (or the given raw chunks)."""

        async def handler(request: web.Request, body: dict[str, Any]) -> web.StreamResponse:
            resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await resp.prepare(request)
            chunks = (
                list(raw)
                if raw is not None
                else [sse({"jsonrpc": "2.0", "id": body["id"], "result": r}) for r in results]
            )
            for chunk in chunks:
                await resp.write(chunk)
                if delay:
                    await asyncio.sleep(delay)
            if cut:
                assert request.transport is not None
                request.transport.close()
                return resp
            await resp.write_eof()
            return resp

        self.on(method, handler)

    def card(self, card: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        async def handler(request: web.Request) -> web.StreamResponse:
            return web.json_response(card, headers=headers or {})

        self.card_handler = handler
