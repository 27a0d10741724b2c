"""Fixtures of the functional tests: the app under test (``app``, see tests/conftest.py) on a real
port of 127.0.0.1, and a2a-wire's own client connected to it through the card it serves."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pg_support
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from store_support import ServeStorage, store_kind  # noqa: F401  (store_kind: every server store)

from a2a_wire.client import A2AClient, ClientSettings


@pytest.fixture
def client_settings() -> ClientSettings:
    """The settings of ``client``: 127.0.0.1 allowlisted; a module overrides this to add more."""
    return ClientSettings(allow=("127.0.0.1",))


@pytest.fixture
async def server(app: web.Application) -> AsyncIterator[TestServer]:
    """``app`` listening on 127.0.0.1, closed at teardown."""
    test_server = TestServer(app, host="127.0.0.1")
    await test_server.start_server()
    yield test_server
    await test_server.close()


@pytest.fixture
async def client(server: TestServer, client_settings: ClientSettings) -> AsyncIterator[A2AClient]:
    """Our client, connected through the card ``server`` serves; closed at teardown."""
    async with await A2AClient.connect(str(server.make_url("/")), settings=client_settings) as a2a:
        yield a2a


@pytest.fixture(params=["sqlite", "postgresql"])
async def serve_storage(request: pytest.FixtureRequest) -> AsyncIterator[ServeStorage]:
    """The storage of an ``a2a-wire serve`` test: SQLite in its data directory, or PostgreSQL
    in a schema of the test's own, dropped after it."""
    if request.param == "sqlite":
        yield ServeStorage("sqlite")
        return
    dsn = str(request.getfixturevalue("postgres_dsn"))
    storage = ServeStorage("postgresql", dsn, pg_support.new_schema())
    yield storage
    await pg_support.drop_schema(dsn, storage.schema)
