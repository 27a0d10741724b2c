"""Fixtures of the client tests: a scripted fake agent on 127.0.0.1 (see ``client_fake``)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from aiohttp.test_utils import TestServer
from client_fake import FakeAgent


@pytest.fixture
async def agent(aiohttp_server: Callable[..., Awaitable[TestServer]]) -> AsyncIterator[FakeAgent]:
    """A fake agent serving on loopback; handlers held on ``release`` are freed at teardown."""
    fake = FakeAgent()
    server = await aiohttp_server(fake.app)
    fake.base = str(server.make_url("")).rstrip("/")
    yield fake
    fake.release.set()
