"""Cancel requests and their replies in the PostgreSQL store (store/_log_postgres_cancel.py).

Stores on one schema stand for processes; leases follow a :class:`~pg_stores.LeaseClock` the
test moves, and the keepers do not beat (``heartbeat_seconds=None``): they only take cancel
requests, woken by the notification (or each ``poll_interval``).
"""

from __future__ import annotations

import asyncio

import asyncpg
import pytest
from pg_stores import DEADLINE, LeaseClock, Stores, until
from test_event_log import make_task

from a2a_wire.server.store._log_postgres import PostgresEventLog
from a2a_wire.server.store._log_postgres_ddl import SCHEMA_VERSION
from a2a_wire.server.store._shared import CancelReply, CancelRequest
from a2a_wire.types import TaskState

S = TaskState


@pytest.fixture
def clock() -> LeaseClock:
    return LeaseClock()


async def two(stores: Stores, clock: LeaseClock) -> tuple[PostgresEventLog, PostgresEventLog]:
    return (
        await stores(lease_clock=clock, heartbeat_seconds=None),
        await stores(lease_clock=clock, heartbeat_seconds=None),
    )


async def test_a_request_carries_its_metadata_to_the_holder_and_the_reply_comes_back(
    stores: Stores, clock: LeaseClock
) -> None:
    holder, asker = await two(stores, clock)
    got: list[CancelRequest] = []
    holder.on_cancel(got.append)
    await holder.create(make_task("run", S.WORKING))
    sent = CancelRequest("r1", "run", asker.process_id, {"reason": "user", "n": [1, 2]})
    assert await asker.request_cancel(sent) == holder.process_id
    await until(lambda: got == [sent])
    error = {"code": -32002, "message": "not now", "data": [{"reason": "TASK_NOT_CANCELABLE"}]}
    waiting = asyncio.create_task(asker.wait_cancel_reply("r1", timeout=DEADLINE))
    await holder.reply_cancel(sent, CancelReply("error", error))
    assert await waiting == CancelReply("error", error)  # woken by the notification
    await holder.reply_cancel(
        second := CancelRequest("r2", "run", asker.process_id), CancelReply("done")
    )
    await holder.reply_cancel(second, CancelReply("absent"))  # the first reply stands
    assert await asker.wait_cancel_reply("r2", timeout=DEADLINE) == CancelReply("done")
    assert await asker.wait_cancel_reply("r1", timeout=0) is None  # taken: gone


async def test_no_request_is_sent_without_a_live_lease_and_no_reply_without_an_asker(
    stores: Stores, clock: LeaseClock, admin: asyncpg.Connection, postgres_schema: str
) -> None:
    holder, asker = await two(stores, clock)
    await holder.create(make_task("ask", S.INPUT_REQUIRED))
    assert await asker.request_cancel(CancelRequest("r1", "ask", asker.process_id)) is None
    await holder.create(make_task("run", S.WORKING))
    anonymous = CancelRequest("r2", "run", "")
    assert await asker.request_cancel(anonymous) == holder.process_id
    await holder.reply_cancel(anonymous, CancelReply("done"))
    rows = await admin.fetchval(f"SELECT count(*) FROM {postgres_schema}.cancel_replies")
    assert rows == 0
    assert await asker.wait_cancel_reply("r2", timeout=0.05) is None


async def test_two_askers_of_one_task_each_get_their_reply(
    stores: Stores, clock: LeaseClock
) -> None:
    holder, one = await two(stores, clock)
    other = await stores(lease_clock=clock, heartbeat_seconds=None)
    got: list[CancelRequest] = []
    holder.on_cancel(got.append)
    await holder.create(make_task("run", S.WORKING))
    first = CancelRequest("a", "run", one.process_id)
    second = CancelRequest("b", "run", other.process_id, {"k": "v"})
    assert await one.request_cancel(first) == await other.request_cancel(second)
    await until(lambda: len(got) == 2)
    assert {r.id for r in got} == {"a", "b"}
    await holder.reply_cancel(first, CancelReply("done"))
    await holder.reply_cancel(second, CancelReply("absent"))
    assert await one.wait_cancel_reply("a", timeout=DEADLINE) == CancelReply("done")
    assert await other.wait_cancel_reply("b", timeout=DEADLINE) == CancelReply("absent")


async def test_a_reply_whose_asker_is_gone_is_tidied_away(
    stores: Stores, clock: LeaseClock, admin: asyncpg.Connection, postgres_schema: str
) -> None:
    holder, asker = await two(stores, clock)
    await holder.heartbeat()
    await asker.heartbeat()
    await holder.create(make_task("run", S.WORKING))
    for n, who in enumerate([asker.process_id, "a-process-long-gone"]):
        request = CancelRequest(f"r{n}", "run", who)
        await holder.reply_cancel(request, CancelReply("done"))
    await holder.take_over()
    left = await admin.fetch(f"SELECT request_id FROM {postgres_schema}.cancel_replies")
    assert [r["request_id"] for r in left] == ["r0"]  # its asker is alive: kept for it


async def test_upgrading_a_version_2_schema_keeps_waiting_requests_without_an_asker(
    stores: Stores,
    clock: LeaseClock,
    admin: asyncpg.Connection,
    postgres_dsn: str,
    postgres_schema: str,
) -> None:
    old = await stores(lease_clock=clock, heartbeat_seconds=None)
    await old.create(make_task("run", S.WORKING))
    holder = old.process_id
    await old.close()
    s = postgres_schema
    await admin.execute(
        f"DROP TABLE {s}.cancel_replies; DROP INDEX {s}.cancel_requests_by_task;"
        f" ALTER TABLE {s}.cancel_requests DROP CONSTRAINT cancel_requests_pkey,"
        " DROP COLUMN id, DROP COLUMN asker, DROP COLUMN metadata, ADD PRIMARY KEY (task_id);"
        f" UPDATE {s}.task_leases SET expires_at = 'infinity';"  # still held, as by a live v2 process
        f" INSERT INTO {s}.cancel_requests VALUES ('run', '{holder}', 1);"
        f" UPDATE {s}.schema_version SET version = 2"
    )
    upgraded = PostgresEventLog(
        postgres_dsn, schema=s, heartbeat_seconds=None, process_id=holder, recover=False
    )
    try:
        await upgraded.open()
        assert await admin.fetchval(f"SELECT version FROM {s}.schema_version") == SCHEMA_VERSION
        got: list[CancelRequest] = []
        upgraded.on_cancel(got.append)
        await until(lambda: got == [CancelRequest("run", "run", "", None)])
    finally:
        await upgraded.close()
