"""Request ids come back exactly as sent, over real HTTP (JSON-RPC 2.0 section 5).

The answers are compared as raw bytes: a JSON parser on the test side would hide the difference
between ``123456789012345678901234567890`` and ``1.2345678901234568e+29``.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from server_support import V1, ScriptedAgent, make_card, send_params
from store_support import ServerStores

from a2a_wire import codec
from a2a_wire.server import create_app

ID_TEXTS = [
    '"abc"',
    '"\\u00e9"',
    "0",
    "-7",
    "9223372036854775807",
    "18446744073709551615",
    "18446744073709551616",
    "-9223372036854775809",
    "123456789012345678901234567890",
    "1.5",
    "-0.0",
    "1e2",
    "2.5E-3",
    "0.1000000000000000000001",
    "null",
]
ANSWER_ID = re.compile(rb'"id":((?:"(?:[^"\\]|\\.)*")|[^,}]+)')


@pytest.fixture
def app(agent: ScriptedAgent, store_for: ServerStores) -> Any:
    return create_app(make_card(), agent, store=store_for())


async def raw_post(client: Any, body: bytes) -> tuple[int, str, bytes]:
    headers = {"Content-Type": "application/json", **V1}
    response = await client.post("/", data=body, headers=headers)
    return response.status, response.content_type, await response.read()


def request_text(rid: str, method: str = "GetTask", params: Any = None) -> bytes:
    params = {"id": "no-such-task"} if params is None else params
    return (
        b'{"jsonrpc": "2.0", "id": ' + rid.encode() + b', "method": "' + method.encode() + b'", '
        b'"params": ' + codec.dumps(params) + b"}"
    )


def echoed(answer: bytes) -> bytes:
    match = ANSWER_ID.search(answer)
    assert match is not None, answer
    return match.group(1)


def same_id(sent: str, got: bytes) -> bool:
    """Strings may be re-escaped; every other id comes back as the very text sent."""
    if sent.startswith('"'):
        return bool(codec.loads(got) == codec.loads(sent))
    return got == sent.encode()


@pytest.mark.parametrize("rid", ID_TEXTS)
async def test_an_error_answer_carries_the_id_as_sent(client: Any, rid: str) -> None:
    status, _, answer = await raw_post(client, request_text(rid))
    assert status == 200 and b'"code":-32001' in answer
    assert same_id(rid, echoed(answer))


@pytest.mark.parametrize("rid", ["123456789012345678901234567890", "1e2", "-0.0"])
async def test_a_result_carries_the_id_as_sent(client: Any, rid: str) -> None:
    status, _, answer = await raw_post(
        client, request_text(rid, "SendMessage", send_params("echo"))
    )
    assert status == 200 and b'"result":' in answer
    assert echoed(answer) == rid.encode()


async def test_a_batch_carries_every_id_as_sent(client: Any) -> None:
    members = [request_text(rid) for rid in ID_TEXTS]
    status, _, answer = await raw_post(client, b"[" + b", ".join(members) + b"]")
    assert status == 200
    got = [m.group(1) for m in ANSWER_ID.finditer(answer)]
    assert len(got) == len(ID_TEXTS)
    assert all(same_id(sent, back) for sent, back in zip(ID_TEXTS, got, strict=True))


@pytest.mark.parametrize("rid", ["123456789012345678901234567890", "7.25"])
async def test_every_stream_event_carries_the_id_as_sent(client: Any, rid: str) -> None:
    body = request_text(rid, "SendStreamingMessage", send_params("echo"))
    status, content_type, answer = await raw_post(client, body)
    assert status == 200 and content_type == "text/event-stream"
    events = [line for line in answer.split(b"\n") if line.startswith(b"data:")]
    assert len(events) >= 3
    assert all(echoed(event) == rid.encode() for event in events)


async def test_a_refused_stream_carries_the_id_as_sent(client: Any) -> None:
    rid = "123456789012345678901234567890"
    body = request_text(rid, "SubscribeToTask", {"id": "no-such-task"})
    _, _, answer = await raw_post(client, body)
    assert b'"code":-32001' in answer and echoed(answer) == rid.encode()
