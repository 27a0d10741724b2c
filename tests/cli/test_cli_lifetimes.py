"""The client commands' limits: ``--timeout`` bounds the whole command, an answer too large names
the option to raise, ``list`` asks for no history, and errors name the task left behind."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import click
import pytest
from aiohttp import web
from e2e_support import cli_async, fake_agent

from a2a_wire.cli._params import ByteSize

Rpc = Callable[[web.Request, dict[str, Any]], Awaitable[web.StreamResponse]]


def _task(task_id: str = "t1", state: str = "TASK_STATE_WORKING", **extra: Any) -> dict[str, Any]:
    return {"id": task_id, "contextId": "c1", "status": {"state": state}, **extra}


def _event(rid: Any, result: Any) -> bytes:
    return (
        b"data: " + json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}).encode() + b"\n\n"
    )


@pytest.fixture
async def gate() -> AsyncIterator[asyncio.Event]:
    """Stalled handlers wait on this; it opens at teardown so that the server stops at once."""
    event = asyncio.Event()
    yield event
    event.set()


def _card(request: web.Request) -> dict[str, Any]:
    interface = {
        "url": f"{request.url.origin()}/rpc",
        "protocolBinding": "JSONRPC",
        "protocolVersion": "1.0",
    }
    return {
        "name": "scripted",
        "description": "a scripted agent",
        "version": "1",
        "supportedInterfaces": [interface],
        "capabilities": {"streaming": True},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [],
    }


@pytest.fixture
def serve(aiohttp_server: Any, gate: asyncio.Event) -> Callable[[Rpc], Awaitable[str]]:
    """Serve a card and ``rpc`` as the JSON-RPC handler; returns the base URL."""

    async def start(rpc: Rpc) -> str:
        async def card(request: web.Request) -> web.Response:
            return web.json_response(_card(request))

        async def handler(request: web.Request) -> web.StreamResponse:
            return await rpc(request, await request.json())

        app = web.Application()
        app.router.add_get("/.well-known/agent-card.json", card)
        app.router.add_post("/rpc", handler)
        server = await aiohttp_server(app)
        return str(server.make_url("/"))

    return start


# -- --timeout ---------------------------------------------------------------------------------


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port on 127.0.0.1 that accepts connections (the kernel does) and never answers."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield listener.getsockname()[1]


async def test_timeout_covers_the_card_fetch(silent_port: int) -> None:
    url = f"http://127.0.0.1:{silent_port}"
    code, _, err = await cli_async("send", url, "hi", "--timeout", "0.5")
    assert code == 3, err
    # The command's own limit, not card_timeout (30 s), ended it.
    assert err.startswith("error: TotalTimeoutError: --timeout=0.5s exceeded"), err


async def test_timeout_covers_a_stream_that_trickles(
    serve: Callable[[Rpc], Awaitable[str]], gate: asyncio.Event
) -> None:
    async def rpc(request: web.Request, body: dict[str, Any]) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for byte in _event(body["id"], {"task": _task("t-slow")}):
            if gate.is_set():
                break
            await resp.write(bytes([byte]))
            await asyncio.sleep(0.05)  # one byte at a time: the event takes seconds to arrive
        return resp

    url = await serve(rpc)
    code, _, err = await cli_async("send", url, "hi", "--stream", "--timeout", "1")
    assert code == 3, err
    assert "--timeout=1s exceeded" in err


async def test_a_stream_timeout_names_the_task_it_left(
    serve: Callable[[Rpc], Awaitable[str]], gate: asyncio.Event
) -> None:
    async def rpc(request: web.Request, body: dict[str, Any]) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(_event(body["id"], {"task": _task("t-known")}))
        await gate.wait()
        return resp

    url = await serve(rpc)
    code, out, err = await cli_async("send", url, "hi", "--stream", "--timeout", "1")
    assert code == 3, err
    assert out.startswith("task      t-known")  # the event was shown
    assert f"task t-known (a2a-wire get {url} t-known shows it)" in err
    code, _, err = await cli_async("subscribe", url, "t-known", "--timeout", "1", "--json")
    assert code == 3
    assert json.loads(err)["error"]["taskId"] == "t-known"


async def test_a_blocking_send_that_times_out_names_the_task_it_continues(
    serve: Callable[[Rpc], Awaitable[str]], gate: asyncio.Event
) -> None:
    async def rpc(request: web.Request, body: dict[str, Any]) -> web.StreamResponse:
        await gate.wait()
        return web.Response()

    url = await serve(rpc)
    code, _, err = await cli_async("send", url, "more", "--task-id", "t-old", "--timeout", "0.5")
    assert code == 3, err
    assert "task t-old" in err
    code, _, err = await cli_async("send", url, "new", "--timeout", "0.5")
    assert code == 3 and "task" not in err.split("\n", 1)[1], err  # no id known yet


# -- sizes ---------------------------------------------------------------------------------------


async def test_a_too_large_answer_names_the_option_and_the_task(
    serve: Callable[[Rpc], Awaitable[str]],
) -> None:
    async def rpc(request: web.Request, body: dict[str, Any]) -> web.StreamResponse:
        history = [{"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x" * 40_000}]}]
        task = _task("t-big", "TASK_STATE_COMPLETED", history=history)
        return web.json_response({"jsonrpc": "2.0", "id": body["id"], "result": {"task": task}})

    url = await serve(rpc)
    code, _, err = await cli_async("send", url, "hi", "--max-response-bytes", "20KiB")
    assert code == 4, err
    first, second = err.splitlines()
    assert first == (
        "error: ResponseTooLargeError: the answer exceeds max_response_bytes=20480 bytes; "
        "raise the limit with --max-response-bytes (or ask for less history with --history)"
    )
    assert second.startswith("task t-big ")
    code, _, _ = await cli_async("send", url, "hi", "--max-response-bytes", "1MiB")
    assert code == 0


async def test_list_asks_for_no_history_unless_told(aiohttp_server: Any) -> None:
    seen: list[dict[str, Any]] = []

    def answer(method: str, params: dict[str, Any]) -> dict[str, Any]:
        seen.append(params)
        return {"tasks": [], "nextPageToken": "", "pageSize": 50, "totalSize": 0}

    server = await aiohttp_server(fake_agent(answer))
    url = str(server.make_url("/"))
    for args in ((), ("--history", "3")):
        code, _, err = await cli_async("list", url, *args)
        assert code == 0, err
    assert [p.get("historyLength") for p in seen] == [0, 3]


@pytest.mark.parametrize(
    ("text", "size"),
    [("65536", 65536), ("512KiB", 512 * 1024), ("64 mib", 64 << 20), ("1GiB", 1 << 30)],
)
def test_sizes_read(text: str, size: int) -> None:
    assert ByteSize().convert(text, None, None) == size


@pytest.mark.parametrize("text", ["0", "-1", "1.5MiB", "10MB", "lots", ""])
def test_sizes_refused(text: str) -> None:
    with pytest.raises(click.BadParameter, match="is not a size"):
        ByteSize().convert(text, None, None)
