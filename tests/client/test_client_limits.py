"""Limits that agree with the server's, too-large answers that name the setting and the task,
and the skill a message is for."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aiohttp import web
from client_fake import FakeAgent, message_json, task_json

from a2a_wire.client import A2AClient, ClientSettings, ResponseTooLargeError
from a2a_wire.client._peek import send_message_task, string_at
from a2a_wire.client._settings import (
    ANSWER_COPIES,
    DEFAULT_MAX_RESPONSE_BYTES,
    SERVER_MAX_BODY_BYTES,
)
from a2a_wire.server import SKILL_ID_KEY, ServerSettings
from a2a_wire.types import GetTaskRequest

Body = dict[str, Any]


def test_client_defaults_read_what_the_default_server_can_answer() -> None:
    server, client = ServerSettings(), ClientSettings()
    assert SERVER_MAX_BODY_BYTES == server.max_body_bytes
    # An echoing answer holds the request twice (history and artifact), with room to spare.
    assert ANSWER_COPIES >= 4
    assert client.max_response_bytes == DEFAULT_MAX_RESPONSE_BYTES
    assert client.max_event_bytes == DEFAULT_MAX_RESPONSE_BYTES
    assert DEFAULT_MAX_RESPONSE_BYTES >= ANSWER_COPIES * server.max_body_bytes
    # A quiet stream of the default server (a comment every keepalive_seconds) is not idle.
    assert client.stream_idle_timeout is not None
    assert client.stream_idle_timeout >= 3 * server.keepalive_seconds


def big_answer(body: Body, task_id: str = "t-big") -> dict[str, Any]:
    history = [message_json("x" * 50_000)]
    return {
        "jsonrpc": "2.0",
        "id": body["id"],
        "result": {"task": task_json(task_id, history=history)},
    }


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
async def test_too_large_send_answer_names_the_setting_and_the_task(
    agent: FakeAgent, framing: str
) -> None:
    async def handler(request: web.Request, body: Body) -> web.StreamResponse:
        data = json.dumps(big_answer(body)).encode()
        if framing == "content-length":
            return web.Response(body=data, content_type="application/json")
        resp = web.StreamResponse(headers={"Content-Type": "application/json"})
        resp.enable_chunked_encoding()
        await resp.prepare(request)
        for start in range(0, len(data), 4096):
            await resp.write(data[start : start + 4096])
        await resp.write_eof()
        return resp

    agent.on("SendMessage", handler)
    settings = ClientSettings(allow=["127.0.0.1"], max_response_bytes=20_000)
    async with A2AClient(agent.url, settings=settings) as client:
        with pytest.raises(ResponseTooLargeError) as caught:
            await client.send_text("hi")
    assert caught.value.task_id == "t-big"
    assert caught.value.setting == "max_response_bytes" and caught.value.limit == 20_000
    assert str(caught.value) == (
        "response exceeds max_response_bytes=20000 bytes; raise ClientSettings.max_response_bytes"
    )


async def test_too_large_get_task_names_the_task_asked_for(agent: FakeAgent) -> None:
    async def handler(request: web.Request, body: Body) -> web.StreamResponse:
        return web.json_response({"jsonrpc": "2.0", "id": body["id"], "result": "x" * 50_000})

    agent.on("GetTask", handler)
    settings = ClientSettings(allow=["127.0.0.1"], max_response_bytes=20_000)
    async with A2AClient(agent.url, settings=settings) as client:
        with pytest.raises(ResponseTooLargeError) as caught:
            await client.get_task(GetTaskRequest(id="asked"))
    assert caught.value.task_id == "asked"


def test_string_at_reads_the_task_id_at_the_start_of_an_answer() -> None:
    answer = json.dumps(big_answer({"id": 7}, "tid-1")).encode()
    assert send_message_task(answer[:200]) == "tid-1"
    cut = answer.index(b"tid-1") + 2
    assert send_message_task(answer[:cut]) == ""  # cut inside the id: nothing invented
    spaced = b'{ "id" : 1 , "jsonrpc" : "2.0" , "result" : { "task" : { "id" : "a\\"b" , "x'
    assert send_message_task(spaced) == 'a"b'
    # Members before the wanted one are skipped only when complete.
    assert string_at(b'{"a": [1, {"b": 2}], "k": "v"', ["k"]) == "v"
    assert string_at(b'{"a": [1, {"b": 2', ["k"]) == ""


@pytest.mark.parametrize(
    "head",
    [
        b"",
        b"[]",
        b'{"result": {"message": {"messageId": "m"}}}',
        b'{"result": {"task": {"id": 5}}}',
        b'{"result": {"task": "t"}}',
        b'{"result" 1}',
        b"\xff\xfe{",
        b"{" * 5000,
    ],
)
def test_string_at_never_raises(head: bytes) -> None:
    assert send_message_task(head) == ""


async def test_send_text_puts_the_skill_where_the_server_reads_it(
    client: A2AClient, agent: FakeAgent
) -> None:
    agent.reply("SendMessage", {"task": task_json()})
    await client.send_text("hi", skill="echo", metadata={"trace": "1"})
    params = agent.requests[-1].params
    assert params["message"]["metadata"] == {SKILL_ID_KEY: "echo"}
    assert params["metadata"] == {"trace": "1"}  # request metadata stays the caller's own
    await client.send_text("hi")
    assert "metadata" not in agent.requests[-1].params["message"]


def test_text_request_skill_is_message_metadata() -> None:
    request = A2AClient.text_request("hi", skill="reverse")
    assert request.message is not None and request.message.metadata == {"skillId": "reverse"}


@pytest.mark.parametrize(
    "name", ["read_timeout", "total_timeout", "stream_idle_timeout", "stream_timeout"]
)
def test_optional_time_limits_are_positive_or_none(name: str) -> None:
    assert getattr(ClientSettings(**{name: None}), name) is None
    for bad in (0, -1.0):
        with pytest.raises(ValueError, match=f"^{name} must be positive or None$"):
            ClientSettings(**{name: bad})
