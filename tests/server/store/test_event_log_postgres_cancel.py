"""Cancel requests between PostgreSQL stores: a request on any store reaches the lease holder.

Every store here has a lease clock the test moves and no heartbeat of its own, so no lease
expires because the machine was slow.
"""

from __future__ import annotations

from typing import Any

import asyncpg
import pytest
from pg_stores import DEADLINE, LeaseClock, Stores, until
from test_event_log import make_task, status

from a2a_wire.server.store._log_postgres import PostgresEventLog
from a2a_wire.server.store._log_postgres_lease import LEASE_SECONDS
from a2a_wire.types import TaskState

S = TaskState
QUIET = 10 * DEADLINE
"""A poll interval so long that only a notification can deliver within a test's deadline."""


@pytest.fixture
def quiet(stores: Stores) -> Stores:
    """Opens stores on one lease clock that does not move, without heartbeats."""
    clock = LeaseClock()

    async def open_store(**options: Any) -> PostgresEventLog:
        options.setdefault("lease_clock", clock)
        return await stores(heartbeat_seconds=None, **options)

    return open_store


async def requests_left(admin: asyncpg.Connection, schema: str) -> int:
    return int(await admin.fetchval(f"SELECT count(*) FROM {schema}.cancel_requests"))


async def test_a_request_on_one_store_reaches_the_holder_by_notification(
    quiet: Stores, admin: asyncpg.Connection, postgres_schema: str
) -> None:
    a = await quiet(poll_interval=QUIET)
    b, c = await quiet(), await quiet()
    got_a: list[str] = []
    got_b: list[str] = []
    a.on_cancel(got_a.append)
    b.on_cancel(got_b.append)
    await a.create(make_task("run", S.WORKING))
    assert await c.request_cancel("run") == a.process_id
    await until(lambda: got_a == ["run"])
    assert got_b == [] and await requests_left(admin, postgres_schema) == 0


async def test_a_request_the_holder_sends_itself_reaches_its_own_callbacks(
    quiet: Stores,
) -> None:
    a = await quiet(poll_interval=QUIET)
    got: list[str] = []
    a.on_cancel(got.append)
    await a.create(make_task("run", S.WORKING))
    assert await a.request_cancel("run") == a.process_id
    await until(lambda: got == ["run"])


async def test_no_request_is_sent_without_a_live_holder(
    quiet: Stores, admin: asyncpg.Connection, postgres_schema: str
) -> None:
    clock = LeaseClock()
    a, b = await quiet(lease_clock=clock), await quiet(lease_clock=clock)
    await a.create(make_task("ask", S.INPUT_REQUIRED))
    await a.create(make_task("done", S.WORKING))
    await a.append("done", [status(S.COMPLETED)])
    await a.create(make_task("run", S.WORKING))
    assert await b.request_cancel("ask") is None  # interrupted: nothing runs
    assert await b.request_cancel("done") is None
    assert await b.request_cancel("nothing") is None
    clock.now += LEASE_SECONDS + 1  # a died; the takeover scan has not run yet
    assert await b.request_cancel("run") is None
    assert await requests_left(admin, postgres_schema) == 0


async def test_a_lost_notification_costs_one_poll(quiet: Stores) -> None:
    a = await quiet(poll_interval=0.05)
    b = await quiet()
    got: list[str] = []
    a.on_cancel(got.append)
    await a.create(make_task("run", S.WORKING))
    listener = a._listener
    assert listener is not None and listener._conn is not None
    await listener._conn.execute("UNLISTEN *")  # every notification from now on is lost
    assert await b.request_cancel("run") == a.process_id
    await until(lambda: got == ["run"])


async def test_a_request_waits_for_the_first_callback(quiet: Stores) -> None:
    a = await quiet(poll_interval=QUIET)
    b = await quiet()
    await a.create(make_task("run", S.WORKING))
    assert await b.request_cancel("run") == a.process_id
    assert await a.poll_cancels() == []  # nobody to give it to: it stays
    got: list[str] = []
    a.on_cancel(got.append)
    await until(lambda: got == ["run"])


async def test_a_request_whose_lease_ended_is_tidied_by_the_scan(
    quiet: Stores, admin: asyncpg.Connection, postgres_schema: str
) -> None:
    a = await quiet()
    b = await quiet()
    await a.create(make_task("run", S.WORKING))
    assert await b.request_cancel("run") == a.process_id
    await a.append("run", [status(S.COMPLETED)])  # finished before it looked
    assert await requests_left(admin, postgres_schema) == 1
    assert await b.take_over() == []
    assert await requests_left(admin, postgres_schema) == 0


async def test_a_failing_callback_does_not_lose_the_others(quiet: Stores) -> None:
    a = await quiet(poll_interval=QUIET)
    b = await quiet()
    got: list[str] = []

    def broken(task_id: str) -> None:
        raise RuntimeError("boom")

    a.on_cancel(broken)
    a.on_cancel(got.append)
    for task_id in ("t1", "t2"):
        await a.create(make_task(task_id, S.WORKING))
        assert await b.request_cancel(task_id) == a.process_id
    await until(lambda: sorted(got) == ["t1", "t2"])
