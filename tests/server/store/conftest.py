"""Fixtures of the store suites: every test taking ``store`` or ``backend`` runs on each backend
of ``store_support.BACKENDS``; ``stores`` and ``admin`` serve the PostgreSQL tests (``pg_stores.py``)."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import asyncpg
import pg_support
import pytest
from pg_stores import Stores, open_stores
from store_support import BACKENDS, Backend

from a2a_wire.server.store import EventLogStore


@pytest.fixture(params=BACKENDS)
def backend_kind(request: pytest.FixtureRequest) -> str:
    if request.param == "postgresql":
        request.getfixturevalue("postgres_dsn")  # skips, or names the server of the backend
    return str(request.param)


@pytest.fixture
async def backend(backend_kind: str, tmp_path: Path) -> AsyncIterator[Backend]:
    helper = Backend(backend_kind, tmp_path)
    yield helper
    await helper.close_all()


@pytest.fixture
async def store(backend: Backend) -> EventLogStore:
    return await backend.open()


@pytest.fixture
async def stores(postgres_dsn: str, postgres_schema: str) -> AsyncIterator[Stores]:
    """Opens stores on the test's schema and closes them after the test."""
    async with open_stores(postgres_dsn, postgres_schema) as open_store:
        yield open_store


@pytest.fixture
async def admin(postgres_dsn: str) -> AsyncIterator[asyncpg.Connection]:
    """A connection of the test's own, outside every store."""
    conn = await asyncpg.connect(postgres_dsn)
    yield conn
    await conn.close()


@pytest.fixture(scope="module")
def pg_cluster() -> Iterator[pg_support.Cluster]:
    """A throwaway cluster of the module's own, which its tests may restart and stop.

    Skips (one summary line) without the binaries, or fails with
    ``A2A_WIRE_REQUIRE_POSTGRES_CLUSTER=1``; see tests/pg_support.py.
    """
    reason = pg_support.Cluster.unavailable(pg_support.CLUSTER_MISSING)
    if reason is not None:
        if os.environ.get(pg_support.REQUIRE_CLUSTER_VARIABLE) == "1":
            pytest.fail(f"{pg_support.REQUIRE_CLUSTER_VARIABLE}=1 but {reason}", pytrace=False)
        pytest.skip(reason)
    cluster = pg_support.Cluster.start()
    try:
        yield cluster
    finally:
        with contextlib.suppress(subprocess.CalledProcessError):  # a test left it stopped
            cluster.start_server()
        cluster.stop()
