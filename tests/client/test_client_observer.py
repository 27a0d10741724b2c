"""The exchange observer: every request, response head, body chunk and end, as sent and read."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest
from aiohttp import web
from client_fake import LOCAL, FakeAgent, card_json, sse, status_update, task_json

from a2a_wire.client import (
    A2AClient,
    CardResolver,
    ConnectError,
    ExchangeWatch,
    RedirectRefusedError,
    StaticCredentials,
)
from a2a_wire.types import GetTaskRequest, SubscribeToTaskRequest


class Watch:
    def __init__(self, log: list[tuple[Any, ...]], index: int) -> None:
        self.log = log
        self.index = index

    def response(self, status: int, headers: Mapping[str, str]) -> None:
        self.log.append(("response", self.index, status, headers.get("Content-Type", "")))

    def body(self, chunk: bytes) -> None:
        assert chunk
        self.log.append(("body", self.index, chunk))

    def end(self, error: BaseException | None) -> None:
        self.log.append(("end", self.index, type(error).__name__ if error else None))


class Recorder:
    def __init__(self) -> None:
        self.log: list[tuple[Any, ...]] = []
        self.count = 0

    def exchange(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str],
        body: bytes | None,
        *,
        stream: bool,
    ) -> ExchangeWatch:
        self.count += 1
        auth = headers.get("Authorization", "")
        self.log.append(("request", self.count, method, url, auth, body, stream))
        return Watch(self.log, self.count)

    def kinds(self) -> list[str]:
        return [entry[0] for entry in self.log]

    def body(self, index: int) -> bytes:
        return b"".join(e[2] for e in self.log if e[0] == "body" and e[1] == index)


async def test_a_call_is_seen_as_sent_and_as_answered(agent: FakeAgent) -> None:
    agent.reply("GetTask", task_json())
    seen = Recorder()
    credentials = StaticCredentials("tok")
    async with A2AClient(agent.url, settings=LOCAL, credentials=credentials, observer=seen) as c:
        await c.get_task(GetTaskRequest(id="t1"))
    assert seen.kinds() == ["request", "response", "body", "end"]
    _, _, method, url, auth, body, stream = seen.log[0]
    assert (method, url, auth, stream) == ("POST", agent.url, "Bearer tok", False)
    assert json.loads(body)["method"] == "GetTask"
    assert seen.log[1][2:] == (200, "application/json; charset=utf-8")
    assert json.loads(seen.body(1))["result"]["id"] == "t1"
    assert seen.log[-1] == ("end", 1, None)


async def test_a_stream_is_seen_chunk_by_chunk_and_ends_once(agent: FakeAgent) -> None:
    events = [task_json(state="TASK_STATE_WORKING"), status_update("TASK_STATE_COMPLETED")]
    chunks = [sse({"jsonrpc": "2.0", "id": 1, "result": {"task": events[0]}})]
    chunks.append(sse({"jsonrpc": "2.0", "id": 1, "result": events[1]}))
    agent.stream("SubscribeToTask", [], raw=chunks, delay=0.01)
    seen = Recorder()
    async with A2AClient(agent.url, settings=LOCAL, observer=seen) as c:
        async with c.subscribe_to_task(SubscribeToTaskRequest(id="t1")) as stream:
            got = [event async for event in stream]
    assert len(got) == 2
    assert seen.log[0][6] is True  # opened as a stream
    assert seen.log[1][2:] == (200, "text/event-stream")
    assert seen.body(1) == b"".join(chunks)
    assert [e for e in seen.log if e[0] == "end"] == [("end", 1, None)]


async def test_connect_shows_the_card_fetch_first(agent: FakeAgent) -> None:
    async def card(request: web.Request) -> web.StreamResponse:
        return web.json_response(card_json(agent.base))

    agent.card_handler = card
    agent.reply("GetTask", task_json())
    seen = Recorder()
    client = await A2AClient.connect(agent.base, settings=LOCAL, observer=seen)
    async with client:
        await client.get_task(GetTaskRequest(id="t1"))
    requests = [e for e in seen.log if e[0] == "request"]
    assert [(e[2], e[3]) for e in requests] == [
        ("GET", agent.base + "/.well-known/agent-card.json"),
        ("POST", agent.url),
    ]


async def test_a_refused_redirect_is_seen_with_its_status_and_error(agent: FakeAgent) -> None:
    async def moved(request: web.Request, body: dict[str, Any]) -> web.StreamResponse:
        return web.Response(status=302, headers={"Location": "https://elsewhere.example/"})

    agent.on("GetTask", moved)
    seen = Recorder()
    async with A2AClient(agent.url, settings=LOCAL, observer=seen) as c:
        with pytest.raises(RedirectRefusedError):
            await c.get_task(GetTaskRequest(id="t1"))
    assert seen.kinds() == ["request", "response", "end"]
    assert seen.log[1][2] == 302 and seen.log[-1] == ("end", 1, "RedirectRefusedError")


async def test_a_card_resolver_shows_its_exchanges_to_its_observer(agent: FakeAgent) -> None:
    agent.card(card_json(agent.base))
    seen = Recorder()
    async with CardResolver(settings=LOCAL, observer=seen) as resolver:
        document = await resolver.fetch_document(agent.base)
        await resolver.resolve(agent.base)
    assert seen.kinds().count("request") == 2 and seen.kinds()[-1] == "end"
    card = f"{agent.base}/.well-known/agent-card.json"
    assert [entry[3] for entry in seen.log if entry[0] == "request"] == [card, card]
    assert json.loads(seen.body(1)) == document


async def test_a_failed_connection_ends_with_its_error() -> None:
    seen = Recorder()
    async with A2AClient("http://127.0.0.1:9/", settings=LOCAL, observer=seen) as c:
        with pytest.raises(ConnectError):
            async with c.subscribe_to_task(SubscribeToTaskRequest(id="t1")) as stream:
                await anext(stream)
    assert seen.kinds() == ["request", "end"]
    assert seen.log[-1] == ("end", 1, "ConnectError")


async def test_a_stream_closed_early_ends_its_watch(agent: FakeAgent) -> None:
    first = sse(
        {"jsonrpc": "2.0", "id": 1, "result": {"task": task_json(state="TASK_STATE_WORKING")}}
    )

    async def hold(request: web.Request, body: dict[str, Any]) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(first)
        await agent.stall()
        return resp

    agent.on("SubscribeToTask", hold)
    seen = Recorder()
    async with A2AClient(agent.url, settings=LOCAL, observer=seen) as c:
        async with c.subscribe_to_task(SubscribeToTaskRequest(id="t1")) as stream:
            async for _ in stream:
                break
    assert seen.body(1) == first
    assert [e for e in seen.log if e[0] == "end"] == [("end", 1, None)]
