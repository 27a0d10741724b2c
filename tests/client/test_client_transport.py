"""The client's HTTP layer: redirects, media types, truncation, size and time limits, the guard."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Iterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from client_fake import LOCAL, FakeAgent, task_json
from ports import free_port

from a2a_wire import errors
from a2a_wire.client import (
    A2AClient,
    AddressNotAllowedError,
    AuthenticationError,
    ClientError,
    ClientSettings,
    ConnectError,
    ConnectTimeoutError,
    HTTPStatusError,
    ReadTimeoutError,
    RedirectRefusedError,
    ResponseTooLargeError,
    TotalTimeoutError,
    TransportError,
    TruncatedResponseError,
    UnexpectedContentTypeError,
    safe_url,
)
from a2a_wire.errors import A2AError
from a2a_wire.types import GetTaskRequest

Body = dict[str, Any]


def fast(**limits: Any) -> ClientSettings:
    return ClientSettings(allow=["127.0.0.1"], **limits)


async def get_task(agent: FakeAgent, settings: ClientSettings = LOCAL) -> Any:
    async with A2AClient(agent.url, settings=settings) as client:
        return await client.get_task(GetTaskRequest(id="t1"))


def envelope(body: Body, result: Any = None) -> bytes:
    return json.dumps(
        {"jsonrpc": "2.0", "id": body["id"], "result": result or task_json()}
    ).encode()


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
async def test_redirects_are_refused_with_status_and_location(
    agent: FakeAgent, status: int
) -> None:
    target = "https://elsewhere.example/rpc"

    async def handler(request: web.Request, body: Body) -> web.StreamResponse:
        return web.Response(status=status, headers={"Location": target})

    agent.on("GetTask", handler)
    with pytest.raises(RedirectRefusedError) as caught:
        await get_task(agent)
    assert caught.value.status == status and caught.value.location == target
    assert str(status) in str(caught.value) and target in str(caught.value)
    assert len(agent.requests) == 1


async def test_redirect_message_hides_userinfo_and_query(agent: FakeAgent) -> None:
    async def handler(request: web.Request, body: Body) -> web.StreamResponse:
        return web.Response(status=302, headers={"Location": "https://u:pw@x.example/a?key=k"})

    agent.on("GetTask", handler)
    with pytest.raises(RedirectRefusedError) as caught:
        await get_task(agent)
    assert "pw" not in str(caught.value) and "key=k" not in str(caught.value)
    assert "https://x.example/a" in str(caught.value)


@pytest.mark.parametrize(
    ("status", "content_type", "expected"),
    [
        (200, "text/html", UnexpectedContentTypeError),
        (200, "text/event-stream", UnexpectedContentTypeError),
        (500, "text/html", HTTPStatusError),
        (502, "application/json", HTTPStatusError),  # JSON, but not a JSON-RPC error
        (401, "application/json", AuthenticationError),
        (403, "text/plain", AuthenticationError),
    ],
)
async def test_wrong_status_or_content_type(
    agent: FakeAgent, status: int, content_type: str, expected: type[Exception]
) -> None:
    async def handler(request: web.Request, body: Body) -> web.StreamResponse:
        headers = {"Content-Type": content_type, "WWW-Authenticate": 'Bearer realm="a2a"'}
        return web.Response(status=status, body=b'{"oops": 1}', headers=headers)

    agent.on("GetTask", handler)
    with pytest.raises(expected) as caught:
        await get_task(agent)
    assert isinstance(caught.value, ClientError)
    assert caught.value.status == status  # type: ignore[attr-defined]
    if isinstance(caught.value, AuthenticationError):
        assert caught.value.challenge == 'Bearer realm="a2a"'
    if isinstance(caught.value, UnexpectedContentTypeError):
        assert caught.value.content_type == content_type


async def test_missing_content_type(agent: FakeAgent) -> None:
    async def handler(request: web.Request, body: Body) -> web.StreamResponse:
        resp = web.Response(status=200, body=envelope(body))
        resp.headers.popall("Content-Type", None)
        return resp

    agent.on("GetTask", handler)
    with pytest.raises(
        UnexpectedContentTypeError, match="got application/octet-stream"
    ):  # aiohttp's server fills in octet-stream
        await get_task(agent)


async def test_a2a_json_media_type_is_accepted(agent: FakeAgent) -> None:
    async def handler(request: web.Request, body: Body) -> web.StreamResponse:
        return web.Response(body=envelope(body), content_type="application/a2a+json")

    agent.on("GetTask", handler)
    assert (await get_task(agent)).id == "t1"


async def test_body_that_is_not_json(agent: FakeAgent) -> None:
    async def handler(request: web.Request, body: Body) -> web.StreamResponse:
        return web.Response(body=b'{"jsonrpc": "2.0", ', content_type="application/json")

    agent.on("GetTask", handler)
    with pytest.raises(errors.InvalidAgentResponseError, match="not JSON"):
        await get_task(agent)


async def test_truncated_body(agent: FakeAgent) -> None:
    async def handler(request: web.Request, body: Body) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "application/json"})
        resp.content_length = 1000
        await resp.prepare(request)
        await resp.write(envelope(body)[:20])
        assert request.transport is not None
        request.transport.close()
        return resp

    agent.on("GetTask", handler)
    with pytest.raises(TruncatedResponseError) as caught:
        await get_task(agent)
    assert isinstance(caught.value, TransportError)
    assert isinstance(caught.value.__cause__, aiohttp.ClientPayloadError)


async def test_connection_closed_without_answer(agent: FakeAgent) -> None:
    async def handler(request: web.Request, body: Body) -> web.StreamResponse:
        assert request.transport is not None
        request.transport.close()
        return web.Response()

    agent.on("GetTask", handler)
    with pytest.raises(TransportError, match=r"^request to http://127\.0\.0\.1:\d+/rpc failed: "):
        await get_task(agent)


async def test_declared_oversized_body_is_refused_before_reading(agent: FakeAgent) -> None:
    async def handler(request: web.Request, body: Body) -> web.StreamResponse:
        return web.Response(body=b" " * 5000 + envelope(body), content_type="application/json")

    agent.on("GetTask", handler)
    with pytest.raises(ResponseTooLargeError) as caught:
        await get_task(agent, fast(max_response_bytes=4096))
    assert caught.value.limit == 4096 and "max_response_bytes" in str(caught.value)
    assert (await get_task(agent, fast(max_response_bytes=8192))).id == "t1"


async def test_chunked_oversized_body_is_cut_off(agent: FakeAgent) -> None:
    async def handler(request: web.Request, body: Body) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "application/json"})
        resp.enable_chunked_encoding()
        await resp.prepare(request)
        for _ in range(200):
            await resp.write(b" " * 1024)
        await resp.write(envelope(body))
        return resp

    agent.on("GetTask", handler)
    with pytest.raises(ResponseTooLargeError, match="max_response_bytes=10000 bytes"):
        await get_task(agent, fast(max_response_bytes=10_000))


async def test_slow_body_hits_read_timeout(agent: FakeAgent) -> None:
    async def handler(request: web.Request, body: Body) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "application/json"})
        await resp.prepare(request)
        await resp.write(b" ")
        await agent.stall()
        return resp

    agent.on("GetTask", handler)
    with pytest.raises(ReadTimeoutError) as caught:
        await get_task(agent, fast(read_timeout=0.1))
    assert caught.value.setting == "read_timeout" and caught.value.seconds == 0.1


async def test_slow_answer_hits_total_timeout_not_read_timeout(agent: FakeAgent) -> None:
    async def handler(request: web.Request, body: Body) -> web.StreamResponse:
        await agent.stall()
        return web.Response(body=envelope(body), content_type="application/json")

    agent.on("GetTask", handler)
    with pytest.raises(TotalTimeoutError) as caught:
        await get_task(agent, fast(read_timeout=0.05, total_timeout=0.3))
    assert caught.value.setting == "total_timeout"


async def test_trickling_body_hits_total_timeout(agent: FakeAgent) -> None:
    async def handler(request: web.Request, body: Body) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "application/json"})
        await resp.prepare(request)
        for _ in range(100):
            await resp.write(b" ")
            await asyncio.sleep(0.02)
        return resp

    agent.on("GetTask", handler)
    with pytest.raises(TotalTimeoutError, match="^total_timeout=0.2s exceeded"):
        await get_task(agent, fast(read_timeout=0.5, total_timeout=0.2))


@pytest.fixture
def full_backlog() -> Iterator[int]:
    """A port on 127.0.0.1 whose accept queue is full, so new connects hang."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    fillers = []
    for _ in range(4):
        s = socket.socket()
        s.setblocking(False)
        try:
            s.connect(("127.0.0.1", port))
        except BlockingIOError:
            pass
        fillers.append(s)
    yield port
    for s in fillers:
        s.close()
    listener.close()


async def test_connect_timeout(full_backlog: int) -> None:
    url = f"http://127.0.0.1:{full_backlog}/rpc"
    async with A2AClient(url, settings=fast(connect_timeout=0.2)) as client:
        with pytest.raises(ConnectTimeoutError) as caught:
            await client.get_task(GetTaskRequest(id="t1"))
    assert caught.value.setting == "connect_timeout"


async def test_connection_refused() -> None:
    port = free_port()
    async with A2AClient(f"http://127.0.0.1:{port}/rpc", settings=LOCAL) as client:
        with pytest.raises(ConnectError) as caught:
            await client.get_task(GetTaskRequest(id="t1"))
    assert isinstance(caught.value.__cause__, aiohttp.ClientConnectorError)


async def test_address_guard_refuses_loopback_unless_allowlisted(agent: FakeAgent) -> None:
    agent.reply("GetTask", task_json())
    for url in (agent.url, agent.url.replace("127.0.0.1", "localhost")):
        async with A2AClient(url) as client:
            with pytest.raises(AddressNotAllowedError, match="loopback"):
                await client.get_task(GetTaskRequest(id="t1"))
    assert agent.requests == []
    assert (await get_task(agent, ClientSettings(allow_private=True))).id == "t1"
    assert (await get_task(agent, ClientSettings(allow=["127.0.0.0/8"]))).id == "t1"


async def test_injected_session_still_checks_ip_literals(agent: FakeAgent) -> None:
    agent.reply("GetTask", task_json())
    async with aiohttp.ClientSession() as session:
        async with A2AClient(agent.url, session=session) as client:
            with pytest.raises(AddressNotAllowedError, match="127.0.0.1: loopback"):
                await client.get_task(GetTaskRequest(id="t1"))
        async with A2AClient(agent.url, session=session, settings=LOCAL) as client:
            assert (await client.get_task(GetTaskRequest(id="t1"))).id == "t1"
        assert not session.closed, "an injected session is the caller's to close"


async def test_owned_session_is_closed_and_client_refuses_afterwards(agent: FakeAgent) -> None:
    agent.reply("GetTask", task_json())
    client = A2AClient(agent.url, settings=LOCAL)
    await client.get_task(GetTaskRequest(id="t1"))
    await client.close()
    with pytest.raises(RuntimeError, match="closed"):
        await client.get_task(GetTaskRequest(id="t1"))


async def test_no_foreign_exception_escapes(agent: FakeAgent) -> None:
    async def handler(request: web.Request, body: Body) -> web.StreamResponse:
        assert request.transport is not None
        request.transport.abort()
        return web.Response()

    agent.on("GetTask", handler)
    with pytest.raises(A2AError) as caught:
        await get_task(agent)
    assert not isinstance(caught.value, aiohttp.ClientError | TimeoutError)
    assert isinstance(caught.value, TransportError), "the aborted connection is a transport error"


def test_settings_validation() -> None:
    with pytest.raises(TypeError, match="not one string$"):
        ClientSettings(allow="127.0.0.1")
    with pytest.raises(
        ValueError, match="^not an IP address, network or host name: 'not an address!'$"
    ):
        ClientSettings(allow=["not an address!"])
    with pytest.raises(ValueError, match="^max_response_bytes must be positive$"):
        ClientSettings(max_response_bytes=0)
    assert ClientSettings().total_timeout == 300.0 and ClientSettings().connect_timeout == 10.0


def test_safe_url() -> None:
    assert safe_url("https://u:p@h.example:8443/x?token=s#f") == "https://h.example:8443/x"
    assert safe_url("https://h.example/x") == "https://h.example/x"
