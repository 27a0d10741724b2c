"""Fixtures of the client tests: a scripted fake agent on 127.0.0.1 (see ``client_fake``), and
an :class:`A2AClient` pointed at it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from aiohttp.test_utils import TestServer
from client_fake import LOCAL, FakeAgent

from a2a_wire.client import A2AClient, StaticCredentials


@pytest.fixture
async def agent(aiohttp_server: Callable[..., Awaitable[TestServer]]) -> AsyncIterator[FakeAgent]:
    """A fake agent serving on loopback; handlers held on ``release`` are freed at teardown."""
    fake = FakeAgent()
    server = await aiohttp_server(fake.app)
    fake.base = str(server.make_url("")).rstrip("/")
    yield fake
    fake.release.set()


@pytest.fixture
def client_options() -> dict[str, Any]:
    """Keyword arguments of the ``client`` fixture; a module overrides this to change them."""
    return {"tenant": "acme", "credentials": StaticCredentials("tok-1")}


@pytest.fixture
async def client(agent: FakeAgent, client_options: dict[str, Any]) -> AsyncIterator[A2AClient]:
    """A client of ``agent`` (loopback allowed), closed at teardown."""
    async with A2AClient(agent.url, settings=LOCAL, **client_options) as c:
        yield c
