"""A bearer token too long for ``max_token_bytes`` under the real ``a2a-wire serve``.

aiohttp refuses a header line over its ``max_field_size`` with a bare 400 before the server
sees the request; ``serve`` sets that limit from ``[limits] max_header_bytes`` (and never
below ``max_token_bytes``), so a 100 KB token gets the server's own 401 ``invalid_token`` with
the JSON-RPC error body, and a header past ``max_header_bytes`` still gets aiohttp's 400. The
issuer is never contacted: the length is checked first.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest
from e2e_support import ServerProcess, free_port, write_config

CONFIG = """
[server]
port = {port}
storage = "memory"

[limits]
max_header_bytes = {header_limit}

[[security.oauth2]]
issuer = "https://login.example.com/realms/agents"
audience = "https://agent.example.com"
"""

HEADER_LIMIT = 128 * 1024
PATIENCE = 60.0


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    port = free_port()
    config = write_config(tmp_path / "serve.toml", CONFIG, port=port, header_limit=HEADER_LIMIT)
    process = ServerProcess(["--config", str(config)], tmp_path / "serve.log", port)
    try:
        process.start()
        yield process
    finally:
        process.close()


async def send(url: str, token: str) -> tuple[int, dict[str, str], bytes]:
    body = b'{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "t"}}'
    headers = {
        "Authorization": f"Bearer {token}",
        "Content-Type": "application/json",
        "A2A-Version": "1.0",
    }
    async with (
        asyncio.timeout(PATIENCE),
        aiohttp.ClientSession() as session,
        session.post(url + "/", data=body, headers=headers) as response,
    ):
        return response.status, dict(response.headers), await response.read()


def jwt_shaped(length: int) -> str:
    head = "eyJhbGciOiJSUzI1NiJ9"
    return f"{head}.{'x' * (length - len(head) - 3)}.s"


async def test_a_100_kb_token_gets_the_servers_401(server: ServerProcess) -> None:
    token = jwt_shaped(100_000)
    status, headers, body = await send(server.url, token)
    assert status == 401, body[:200]
    assert headers["WWW-Authenticate"] == 'Bearer realm="a2a", error="invalid_token"'
    assert headers["Content-Type"].startswith("application/json")
    error = json.loads(body)["error"]
    assert error["code"] == -32600
    assert error["data"][0]["reason"] == "UNAUTHENTICATED"
    assert token.encode() not in body
    assert "credential too long" in server.log()


async def test_a_header_past_max_header_bytes_is_still_refused_by_aiohttp(
    server: ServerProcess,
) -> None:
    status, headers, body = await send(server.url, jwt_shaped(HEADER_LIMIT + 1))
    assert status == 400
    assert "WWW-Authenticate" not in headers
    assert f"more than {HEADER_LIMIT} bytes".encode() in body  # aiohttp's own words
    logged = server.log()
    assert f"a request or header line longer than {HEADER_LIMIT} bytes" in logged
    assert "eyJhbGci" not in logged  # aiohttp's message quotes the token's start; the log not
    status, _, _ = await send(server.url, jwt_shaped(100_000))
    assert status == 401  # the server is still serving


@pytest.mark.parametrize(
    ("header_limit", "max_token_bytes", "expected"),
    [(HEADER_LIMIT, 8192, HEADER_LIMIT), (8190, 200_000, 200_000 + len("Bearer ") + 1)],
)
def test_the_header_limit_always_has_room_for_a_token_over_max_token_bytes(
    tmp_path: Path, header_limit: int, max_token_bytes: int, expected: int
) -> None:
    from a2a_wire.cli._serve import _header_limit
    from a2a_wire.cli.config import load

    text = CONFIG + f"\n[security.tokens]\nmax_token_bytes = {max_token_bytes}\n"
    path = write_config(tmp_path / "serve.toml", text, port=0, header_limit=header_limit)
    assert _header_limit(load(path)) == expected
