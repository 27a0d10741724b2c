"""Input the server refuses or repairs before any work, found by trying to break it as a user.

See :mod:`a2a_wire.server._message_rules` (role and parts), the version rule in
:func:`a2a_wire._protocol.wire.check_version`, and the card's Host rules in :mod:`a2a_wire.server._card`.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from server_support import ScriptedAgent, make_card, message, post, result, rpc

from a2a_wire.server import ServerSettings, create_app


def _violations(answer: dict[str, Any]) -> list[str]:
    return [v["field"] for d in answer["error"]["data"] for v in d.get("fieldViolations", [])]


@pytest.mark.parametrize("role", ["banana", "user", "ROLE_USER ", 7, -1, "ROLE_UNSPECIFIED"])
async def test_unknown_or_unspecified_role_is_invalid_params(client: Any, role: Any) -> None:
    answer = await rpc(client, "SendMessage", {"message": message("hi", role=role)})
    assert answer["error"]["code"] == -32602
    assert _violations(answer) == ["message.role"]


@pytest.mark.parametrize("parts", [[{}], [{"video": "x"}], [{"metadata": {"a": 1}}]])
async def test_a_message_without_known_parts_is_invalid_params(client: Any, parts: Any) -> None:
    answer = await rpc(client, "SendMessage", {"message": message("hi", parts=parts)})
    assert answer["error"]["code"] == -32602
    assert _violations(answer) == ["message.parts"]


async def test_parts_of_unknown_kinds_are_skipped_not_stored(client: Any) -> None:
    parts = [{"video": "x"}, {"text": "echo me"}]
    sent = await result(client, "SendMessage", {"message": message("hi", parts=parts)})
    task = await result(client, "GetTask", {"id": sent["task"]["id"]})
    assert task["history"][0]["parts"] == [{"text": "echo me"}]


@pytest.mark.parametrize(
    ("version", "served"),
    [("1.0", True), ("1.0.3", True), ("01.0", False), ("1.00", False), ("1.0.01", False)],
)
async def test_version_numbers_are_read_strictly(client: Any, version: str, served: bool) -> None:
    answer = await rpc(client, "GetTask", {"id": "none"}, headers={"A2A-Version": version})
    assert answer["error"]["code"] == (-32001 if served else -32009)


async def test_a_declared_body_over_the_limit_is_refused_before_it_is_read(
    aiohttp_server: Any,
) -> None:
    settings = ServerSettings(max_body_bytes=1024)
    server = await aiohttp_server(create_app(make_card(), ScriptedAgent(), settings=settings))
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(
        b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"A2A-Version: 1.0\r\nContent-Length: 100000000\r\n\r\n{}"
    )
    await writer.drain()
    status = await asyncio.wait_for(reader.readline(), 5)
    writer.close()
    assert status.startswith(b"HTTP/1.1 413")


async def test_card_varies_by_host_and_refuses_a_bad_host(client: Any) -> None:
    good = await client.get("/.well-known/agent-card.json")
    assert good.status == 200 and good.headers["Vary"] == "Host"
    bad = await client.get("/.well-known/agent-card.json", headers={"Host": "evil.example<script>"})
    assert bad.status == 400
    assert (await bad.json())["error"]["code"] == -32600


async def test_card_with_a_public_url_does_not_vary(aiohttp_client: Any) -> None:
    settings = ServerSettings(public_url="https://agent.example")
    app = create_app(make_card(), ScriptedAgent(), settings=settings)
    client = await aiohttp_client(app)
    response = await client.get("/.well-known/agent-card.json", headers={"Host": "x<y"})
    assert response.status == 200 and "Vary" not in response.headers
    card = await response.json()
    assert card["supportedInterfaces"][0]["url"].startswith("https://agent.example")


async def test_streaming_send_checks_the_message_too(client: Any) -> None:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendStreamingMessage",
        "params": {"message": message("hi", role="banana")},
    }
    response = await post(client, body)
    text = await response.text()
    assert '"code":-32602' in text and "message.role" in text
