"""A 503 answer whose body is a JSON-RPC -32000 error is :class:`UnavailableError` with its
``retry_after``, not an :class:`HTTPStatusError`: for calls and for streams refused before their
first event; a 503 without a JSON-RPC body stays an HTTPStatusError."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aiohttp import web
from client_fake import LOCAL, FakeAgent

from a2a_wire.client import A2AClient, HTTPStatusError
from a2a_wire.errors import UnavailableError
from a2a_wire.server.store import StoreUnavailableError
from a2a_wire.types import GetTaskRequest, SubscribeToTaskRequest

Body = dict[str, Any]


def unavailable(retry: str, *, metadata: bool = True) -> Any:
    async def handler(request: web.Request, body: Body) -> web.StreamResponse:
        info: Body = {"@type": "type.googleapis.com/google.rpc.ErrorInfo"}
        info.update(reason="STORE_UNAVAILABLE", domain="a2a-wire")
        if metadata:
            info["metadata"] = {"retryAfterSeconds": retry}
        error = {"code": -32000, "message": "The task store is unavailable", "data": [info]}
        text = json.dumps({"jsonrpc": "2.0", "id": body["id"], "error": error})
        return web.Response(
            text=text, status=503, content_type="application/json", headers={"Retry-After": retry}
        )

    return handler


async def test_a_call_answered_503_raises_unavailable_with_retry_after(agent: FakeAgent) -> None:
    agent.on("GetTask", unavailable("7"))
    async with A2AClient(agent.url, settings=LOCAL) as client:
        with pytest.raises(UnavailableError) as caught:
            await client.get_task(GetTaskRequest(id="t1"))
    assert caught.value.retry_after == 7 and caught.value.code == -32000
    assert caught.value.data is not None and caught.value.data[0]["reason"] == "STORE_UNAVAILABLE"
    assert not isinstance(caught.value, StoreUnavailableError)  # the client's is the wire class


async def test_retry_after_comes_from_the_header_when_the_body_has_none(agent: FakeAgent) -> None:
    agent.on("GetTask", unavailable("9", metadata=False))
    async with A2AClient(agent.url, settings=LOCAL) as client:
        with pytest.raises(UnavailableError) as caught:
            await client.get_task(GetTaskRequest(id="t1"))
    assert caught.value.retry_after == 9


async def test_a_stream_refused_with_503_raises_unavailable(agent: FakeAgent) -> None:
    agent.on("SubscribeToTask", unavailable("5"))
    async with A2AClient(agent.url, settings=LOCAL) as client:
        with pytest.raises(UnavailableError) as caught:
            async for _ in client.subscribe_to_task(SubscribeToTaskRequest(id="t1")):
                pass
    assert caught.value.retry_after == 5


async def test_a_503_without_a_jsonrpc_body_stays_an_http_status_error(agent: FakeAgent) -> None:
    async def handler(request: web.Request, body: Body) -> web.StreamResponse:
        return web.Response(text="down", status=503)

    agent.on("GetTask", handler)
    async with A2AClient(agent.url, settings=LOCAL) as client:
        with pytest.raises(HTTPStatusError, match="503"):
            await client.get_task(GetTaskRequest(id="t1"))
