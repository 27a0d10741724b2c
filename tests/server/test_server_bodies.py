"""Bodies that arrive badly: hang-ups, stalls, undecodable encodings, refusals before reading.

Raw TCP connections (:class:`server_support.RawConnection`) send what an HTTP client would not.
Every wait has a generous deadline and waits for the server to act (the body timeout under test
is short; nothing else depends on time). ``a2a_wire.server._body`` states the rules.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

import pytest
from server_support import (
    RawConnection,
    ScriptedAgent,
    envelope,
    make_card,
    post_head,
    serve_like_the_cli,
)

from a2a_wire import codec
from a2a_wire.server import ServerSettings, create_app

GET_TASK = codec.dumps(envelope("GetTask", {"id": "no-such-task"}))


@pytest.fixture
async def address(agent: ScriptedAgent) -> AsyncIterator[tuple[str, int]]:
    app = create_app(make_card(), agent, settings=ServerSettings(body_timeout_seconds=0.2))
    async with serve_like_the_cli(app) as served:
        yield served


@pytest.fixture
def logs(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.DEBUG)
    return caplog


def loud(caplog: pytest.LogCaptureFixture) -> list[str]:
    """Records at warning or above, and any traceback."""
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING or r.exc_info]


async def until_logged(caplog: pytest.LogCaptureFixture, text: str, count: int = 1) -> None:
    async with asyncio.timeout(60):
        while sum(text in r.getMessage() for r in caplog.records) < count:
            await asyncio.sleep(0.01)


@pytest.fixture
async def patient(agent: ScriptedAgent) -> AsyncIterator[tuple[str, int]]:
    """A server with the default body timeout (30 s): a hang-up is never taken for a stall."""
    async with serve_like_the_cli(create_app(make_card(), agent)) as served:
        yield served


async def test_hang_ups_while_sending_are_quiet_and_never_500(
    patient: tuple[str, int], logs: pytest.LogCaptureFixture
) -> None:
    address = patient
    for _ in range(20):
        async with await RawConnection.open(address) as conn:
            await conn.send(post_head(len(GET_TASK), Expect="100-continue"))
            await conn.interim(100)  # the request reached the application, which reads the body
            await conn.send(GET_TASK[:10])
    await until_logged(logs, "client hung up during POST /", 20)
    assert loud(logs) == []
    async with await RawConnection.open(address) as conn:  # the server still answers
        await conn.send(post_head(len(GET_TASK)) + GET_TASK)
        status, _, body = await conn.response()
        assert status == 200 and codec.loads(body)["error"]["code"] == -32001


async def test_a_stalled_body_is_408_and_its_connection_is_closed(address: tuple[str, int]) -> None:
    async with await RawConnection.open(address) as conn:
        await conn.send(post_head(len(GET_TASK)) + GET_TASK[:10])  # then nothing more
        status, headers, body = await conn.response()
        assert status == 408 and headers["connection"] == "close"
        answer = codec.loads(body)
        assert answer["id"] is None and answer["error"]["code"] == -32600
        assert "0.2 s" in answer["error"]["message"]
        assert await conn.closed_by_server()


async def test_a_body_in_time_is_read(agent: ScriptedAgent) -> None:
    async with (
        serve_like_the_cli(create_app(make_card(), agent)) as address,  # the 30 s default
        await RawConnection.open(address) as conn,
    ):
        await conn.send(post_head(len(GET_TASK)) + GET_TASK[:10])
        await asyncio.sleep(0)  # the two halves arrive apart
        await conn.send(GET_TASK[10:])
        status, _, body = await conn.response()
        assert status == 200 and codec.loads(body)["error"]["code"] == -32001


async def test_an_undecodable_body_is_400_without_aiohttp_traceback(
    address: tuple[str, int], logs: pytest.LogCaptureFixture
) -> None:
    async with await RawConnection.open(address) as conn:
        await conn.send(post_head(len(GET_TASK), Content_Encoding="gzip") + GET_TASK)
        status, headers, body = await conn.response()
        assert status == 400 and headers["connection"] == "close"
        assert codec.loads(body)["error"]["code"] == -32700
        assert await conn.closed_by_server()
        assert loud(logs) == []


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"Content_Type": "text/plain"}, 415),
        ({"A2A_Version": "1.0", "Content_Length": str(10**9)}, 413),
    ],
)
async def test_a_refusal_before_reading_an_undecodable_body_is_quiet(
    address: tuple[str, int], logs: pytest.LogCaptureFixture, headers: dict[str, str], status: int
) -> None:
    async with await RawConnection.open(address) as conn:
        head = post_head(len(GET_TASK), Content_Encoding="gzip", **headers)
        await conn.send(head + GET_TASK)
        got, _, body = await conn.response()
        assert got == status and "error" in codec.loads(body)
        assert await conn.closed_by_server()
        assert loud(logs) == []


async def test_a_refused_request_whose_body_is_dropped_keeps_its_connection(
    address: tuple[str, int],
) -> None:
    async with await RawConnection.open(address) as conn:
        await conn.send(post_head(len(GET_TASK), Content_Type="text/plain") + GET_TASK)
        status, _, _ = await conn.response()
        assert status == 415
        await conn.send(post_head(len(GET_TASK)) + GET_TASK)  # the same connection, again
        status, _, body = await conn.response()
        assert status == 200 and codec.loads(body)["error"]["code"] == -32001


async def test_a_refused_request_whose_body_stalls_loses_its_connection(
    address: tuple[str, int],
) -> None:
    async with await RawConnection.open(address) as conn:
        await conn.send(post_head(len(GET_TASK), Content_Type="text/plain") + GET_TASK[:10])
        status, _, _ = await conn.response()
        assert status == 415
        assert await conn.closed_by_server()  # after body_timeout_seconds of waiting for the rest


async def test_what_aiohttp_refuses_itself_is_a_plain_400(address: tuple[str, int]) -> None:
    """Documented limit: aiohttp answers unparsable HTTP before the application is called."""
    for garbage in [b"BLAH BLAH\r\n\r\n", b"GET / HTTP/1.1\r\nX-Big: " + b"a" * 9000 + b"\r\n\r\n"]:
        async with await RawConnection.open(address) as conn:
            await conn.send(garbage)
            status, headers, _ = await conn.response()
            assert status == 400 and headers["content-type"].startswith("text/plain")
            assert await conn.closed_by_server()
