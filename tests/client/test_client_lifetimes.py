"""Bounded lifetimes: a stream's idle limit counts complete lines, ``stream_timeout`` bounds a
whole stream, timeouts name the task when it is known, and an abandoned stream lets go of its
connection."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator
from typing import Any

import pytest
from aiohttp import web
from client_fake import FakeAgent, sse, task_json

from a2a_wire.client import (
    A2AClient,
    ClientSettings,
    ClientTimeoutError,
    ReadTimeoutError,
    StreamIdleTimeoutError,
    TotalTimeoutError,
)
from a2a_wire.client._http import StreamConnection
from a2a_wire.types import GetTaskRequest, SubscribeToTaskRequest

Body = dict[str, Any]

#: Long enough never to be reached by a test that passes; the release event ends the handlers.
FOREVER = 60.0


def settings(**limits: Any) -> ClientSettings:
    return ClientSettings(allow=["127.0.0.1"], **limits)


def rpc(result: Any, rid: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "result": result}


def trickle(agent: FakeAgent, first: bytes = b"") -> None:
    """Streams that send ``first``, then one byte after another of an event, never a newline."""

    async def handler(request: web.Request, body: Body) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        if first:
            await resp.write(first.replace(b'"id": 0', f'"id": {body["id"]}'.encode()))
        await resp.write(b"data: ")
        for _ in range(2000):  # 40 s at most, then the stream ends (and the test fails)
            if agent.release.is_set():
                break
            try:
                await resp.write(b" ")
            except ConnectionError:
                break
            await asyncio.sleep(0.02)
        return resp

    agent.on("SendStreamingMessage", handler)


async def test_bytes_that_finish_no_line_do_not_keep_a_stream_alive(agent: FakeAgent) -> None:
    trickle(agent)
    async with A2AClient(agent.url, settings=settings(stream_idle_timeout=0.3)) as client:
        stream = client.send_streaming_message(A2AClient.text_request("go"))
        with pytest.raises(StreamIdleTimeoutError) as caught:
            async with stream:
                [event async for event in stream]
    assert caught.value.setting == "stream_idle_timeout" and caught.value.seconds == 0.3
    assert isinstance(caught.value, ReadTimeoutError | ClientTimeoutError)
    assert str(caught.value).startswith("stream_idle_timeout=0.3s exceeded")


async def test_stream_timeout_bounds_a_whole_stream(agent: FakeAgent) -> None:
    trickle(agent, sse(rpc({"task": task_json("t9", state="TASK_STATE_WORKING")}, 0)))
    limits = settings(stream_idle_timeout=FOREVER, stream_timeout=0.3)
    async with A2AClient(agent.url, settings=limits) as client:
        stream = client.send_streaming_message(A2AClient.text_request("go"))
        with pytest.raises(TotalTimeoutError) as caught:
            async with stream:
                [event async for event in stream]
    assert caught.value.setting == "stream_timeout"
    assert caught.value.task_id == "t9"  # the Task event named it


async def test_stream_timeout_also_bounds_the_wait_for_headers(agent: FakeAgent) -> None:
    async def handler(request: web.Request, body: Body) -> web.StreamResponse:
        await agent.stall(FOREVER)
        return web.Response()

    agent.on("SubscribeToTask", handler)
    limits = settings(read_timeout=FOREVER, stream_timeout=0.2)
    async with A2AClient(agent.url, settings=limits) as client:
        with pytest.raises(TotalTimeoutError) as caught:
            async with client.subscribe_to_task(SubscribeToTaskRequest(id="sub-1")):
                pass
    assert caught.value.setting == "stream_timeout" and caught.value.task_id == "sub-1"


async def test_a_timed_out_call_names_the_task_it_was_about(agent: FakeAgent) -> None:
    async def handler(request: web.Request, body: Body) -> web.StreamResponse:
        await agent.stall(FOREVER)
        return web.Response()

    agent.on("GetTask", handler)
    agent.on("SendMessage", handler)
    async with A2AClient(agent.url, settings=settings(total_timeout=0.2)) as client:
        with pytest.raises(TotalTimeoutError) as caught:
            await client.get_task(GetTaskRequest(id="g-1"))
        assert caught.value.task_id == "g-1"
        with pytest.raises(TotalTimeoutError) as caught:
            await client.send_text("more", task_id="follow-1")
        assert caught.value.task_id == "follow-1"
        with pytest.raises(TotalTimeoutError) as caught:
            await client.send_text("new")
        assert caught.value.task_id == ""  # a new task's id comes only with the answer


class _Content:
    """aiohttp's StreamReader as the stream uses it: nothing is buffered before a read waits."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    def read_nowait(self) -> bytes:
        return b""

    def is_eof(self) -> bool:
        return not self.chunks

    async def readany(self) -> bytes:
        return self.chunks.pop(0) if self.chunks else b""


class _Response:
    closed = False

    def __init__(self, chunks: list[bytes]) -> None:
        self.content = _Content(chunks)

    def close(self) -> None:
        self.closed = True


async def test_only_a_completed_line_restarts_the_idle_clock() -> None:
    chunks = [b"data: {", b'"a": 1}', b"\n", b": keep", b"-alive\r", b"\n"]
    response: Any = _Response(list(chunks))
    conn = StreamConnection(response, "http://127.0.0.1/", settings(stream_idle_timeout=FOREVER))
    seen = [conn._idle_until]
    for _ in chunks:
        await conn.read_chunk()
        seen.append(conn._idle_until)
    restarted = [later != earlier for earlier, later in zip(seen, seen[1:], strict=False)]
    assert restarted[:2] == [False, False]  # bytes of a line that is not finished yet
    assert restarted[2] and not restarted[3]  # "\n" ends the event line; ": keep" does not
    assert all(later >= earlier for earlier, later in zip(seen, seen[1:], strict=False))


# -- abandoned streams ---------------------------------------------------------------------------


@pytest.fixture
def no_gc() -> Iterator[None]:
    """Reference counting alone must free an abandoned stream: the cycle collector is off."""
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def endless(agent: FakeAgent, hung_up: asyncio.Event) -> None:
    """Subscriptions that send a Task, then comments until the client hangs up."""

    async def handler(request: web.Request, body: Body) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(sse(rpc({"task": task_json(state="TASK_STATE_WORKING")}, body["id"])))
        try:
            while not agent.release.is_set():
                await resp.write(b": still here\n")
                await asyncio.sleep(0.02)
        except ConnectionError:
            hung_up.set()
        except asyncio.CancelledError:
            hung_up.set()
            raise
        return resp

    agent.on("SubscribeToTask", handler)


@pytest.mark.usefixtures("no_gc")
@pytest.mark.parametrize("resumable", [False, True], ids=["stream", "resumable"])
async def test_break_out_of_a_bare_async_for_releases_the_response(
    agent: FakeAgent, resumable: bool
) -> None:
    hung_up = asyncio.Event()
    endless(agent, hung_up)
    async with A2AClient(agent.url, settings=settings()) as client:
        stream: Any = client.subscribe_to_task(SubscribeToTaskRequest(id="t1"))
        if resumable:
            stream = client.resumable(stream)
        async for event in stream:
            assert event.task is not None
            break
        assert not hung_up.is_set()  # still referenced: the caller may read on
        del stream
        await asyncio.wait_for(hung_up.wait(), FOREVER)  # the server saw the hang-up


@pytest.mark.usefixtures("no_gc")
async def test_a_temporary_stream_is_released_at_the_break(agent: FakeAgent) -> None:
    hung_up = asyncio.Event()
    endless(agent, hung_up)
    async with A2AClient(agent.url, settings=settings()) as client:
        async for _event in client.subscribe_to_task(SubscribeToTaskRequest(id="t1")):
            break
        await asyncio.wait_for(hung_up.wait(), FOREVER)
