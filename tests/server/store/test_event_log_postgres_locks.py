"""A table of the store locked by another session (``LOCK TABLE ... IN ACCESS EXCLUSIVE MODE``).

The calls on that table wait for the lock and fail at the statement deadline while the others
(heartbeats on ``processes``) succeed. Readiness must say not ready, since the ping reads the
tables requests need; and the outage log must say one warning when the episode begins and one
when it ends, not a pair per success in between. Real locks, held by a connection of the test.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest
from pg_stores import DEADLINE
from server_support import ScriptedAgent, make_card
from test_event_log import make_task

from a2a_wire.server import ServerSettings, create_app
from a2a_wire.server.store import PostgresTaskStore, StoreUnavailableError
from a2a_wire.types import TaskState

STATEMENT = 1.0
"""The stores' deadlines here (seconds); their outage logs' quiet period is twice this."""

READINESS = 0.5
"""``readiness_timeout_seconds`` of the app here."""

DOWN = "PostgreSQL is unavailable"
BACK = "PostgreSQL is available again"


@pytest.fixture
async def store(postgres_dsn: str, postgres_schema: str) -> AsyncIterator[PostgresTaskStore]:
    opened = PostgresTaskStore(
        postgres_dsn,
        schema=postgres_schema,
        statement_timeout=STATEMENT,
        connect_timeout=STATEMENT,
        acquire_timeout=STATEMENT,
        heartbeat_seconds=None,
    )
    await opened.open()
    yield opened
    await opened.close()


def outage_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "a2a_wire.server.store" and r.getMessage().startswith((DOWN, BACK))
    ]


@pytest.mark.parametrize("table", ["tasks", "task_events"])
async def test_a_locked_table_makes_the_ping_fail_within_the_statement_timeout(
    store: PostgresTaskStore, admin: asyncpg.Connection, postgres_schema: str, table: str
) -> None:
    await store.ping()
    async with admin.transaction():
        await admin.execute(f"LOCK TABLE {postgres_schema}.{table} IN ACCESS EXCLUSIVE MODE")
        started = time.monotonic()
        with pytest.raises(StoreUnavailableError):
            await store.ping()
        took = time.monotonic() - started
    print(f"ping on a locked {table} table: {took:.2f} s")
    assert took < STATEMENT + 1.0
    await store.ping()  # released: ready again


async def test_readyz_says_503_while_the_tasks_table_is_locked(
    aiohttp_client: Any,
    postgres_dsn: str,
    postgres_schema: str,
    admin: asyncpg.Connection,
) -> None:
    store = PostgresTaskStore(
        postgres_dsn, schema=postgres_schema, statement_timeout=STATEMENT, heartbeat_seconds=None
    )
    settings = ServerSettings(readiness_timeout_seconds=READINESS)
    client = await aiohttp_client(
        create_app(make_card(), ScriptedAgent(), store=store, settings=settings)
    )
    assert (await client.get("/readyz")).status == 200
    async with admin.transaction():
        await admin.execute(f"LOCK TABLE {postgres_schema}.tasks IN ACCESS EXCLUSIVE MODE")
        started = time.monotonic()
        answer = await client.get("/readyz")
        took = time.monotonic() - started
        assert answer.status == 503
        assert (await answer.json())["reason"] == "STORE_UNAVAILABLE"
    print(f"/readyz with the tasks table locked: 503 after {took:.2f} s")
    assert took < READINESS + 1.0
    async with asyncio.timeout(DEADLINE):  # released: ready again
        while (await client.get("/readyz")).status != 200:
            await asyncio.sleep(0.05)


async def test_a_table_lock_episode_logs_one_warning_when_it_begins_and_one_when_it_ends(
    store: PostgresTaskStore,
    admin: asyncpg.Connection,
    postgres_schema: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, "a2a_wire.server.store")
    await store.create(make_task("t", TaskState.WORKING))
    failed = 0
    async with admin.transaction():
        await admin.execute(f"LOCK TABLE {postgres_schema}.task_events IN ACCESS EXCLUSIVE MODE")
        for _ in range(5):  # reads of the locked table fail; heartbeats succeed in between
            with pytest.raises(StoreUnavailableError):
                await store.get("t")
            failed += 1
            await store.heartbeat()
    assert outage_lines(caplog) == [f"{DOWN} (TimeoutError); calls answer 503 until it is back"]
    async with asyncio.timeout(DEADLINE):  # released: the end, once the quiet period passed
        while len(outage_lines(caplog)) < 2:
            assert await store.get("t") is not None
            await asyncio.sleep(0.1)
    lines = outage_lines(caplog)
    print("\n".join(lines))
    assert len(lines) == 2
    assert lines[1].startswith(BACK) and lines[1].endswith(f"; {failed} calls failed")
