"""Cancel requests between PostgreSQL stores: a request on any store reaches the lease holder,
with its metadata, and the holder's reply reaches the asker.

Every store here has a lease clock the test moves and no heartbeat of its own, so no lease
expires because the machine was slow.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import asyncpg
import pytest
from pg_stores import DEADLINE, LeaseClock, Stores, until
from pg_support import deafen
from test_event_log import make_task, status

from a2a_wire.server.store import LEASE_SECONDS, CancelReply, CancelRequest, PostgresTaskStore
from a2a_wire.server.store.postgresql._schema import SCHEMA_VERSION
from a2a_wire.types import TaskState

S = TaskState
QUIET = 10 * DEADLINE
"""A poll interval so long that only a notification can deliver within a test's deadline."""


@pytest.fixture
def quiet(stores: Stores) -> Stores:
    """Opens stores on one lease clock that does not move, without heartbeats."""
    clock = LeaseClock()

    async def open_store(**options: Any) -> PostgresTaskStore:
        options.setdefault("lease_clock", clock)
        return await stores(heartbeat_seconds=None, **options)

    return open_store


def ask(task_id: str, asker: str = "") -> CancelRequest:
    """A request to cancel ``task_id`` with an id of its own (no reply wanted by default)."""
    return CancelRequest(f"req-{task_id}", task_id, asker)


def task_ids(got: list[str]) -> Callable[[CancelRequest], None]:
    """A cancel callback that notes the task ids of the requests it gets in ``got``."""
    return lambda request: got.append(request.task_id)


async def requests_left(admin: asyncpg.Connection, schema: str) -> int:
    return int(await admin.fetchval(f"SELECT count(*) FROM {schema}.cancel_requests"))


async def test_a_request_on_one_store_reaches_the_holder_by_notification(
    quiet: Stores, admin: asyncpg.Connection, postgres_schema: str
) -> None:
    a = await quiet(poll_interval=QUIET)
    b, c = await quiet(), await quiet()
    got_a: list[str] = []
    got_b: list[str] = []
    a.on_cancel(task_ids(got_a))
    b.on_cancel(task_ids(got_b))
    await a.create(make_task("run", S.WORKING))
    assert await c.request_cancel(ask("run")) == a.process_id
    await until(lambda: got_a == ["run"])
    assert got_b == [] and await requests_left(admin, postgres_schema) == 0


async def test_a_request_the_holder_sends_itself_reaches_its_own_callbacks(
    quiet: Stores,
) -> None:
    a = await quiet(poll_interval=QUIET)
    got: list[str] = []
    a.on_cancel(task_ids(got))
    await a.create(make_task("run", S.WORKING))
    assert await a.request_cancel(ask("run")) == a.process_id
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
    assert await b.request_cancel(ask("ask")) is None  # interrupted: nothing runs
    assert await b.request_cancel(ask("done")) is None
    assert await b.request_cancel(ask("nothing")) is None
    clock.now += LEASE_SECONDS + 1  # a died; the takeover scan has not run yet
    assert await b.request_cancel(ask("run")) is None
    assert await requests_left(admin, postgres_schema) == 0


async def test_a_lost_notification_costs_one_poll(quiet: Stores) -> None:
    a = await quiet(poll_interval=0.05)
    b = await quiet()
    got: list[str] = []
    a.on_cancel(task_ids(got))
    await a.create(make_task("run", S.WORKING))
    await deafen(a)  # every notification from now on is lost
    assert await b.request_cancel(ask("run")) == a.process_id
    await until(lambda: got == ["run"])


async def test_a_request_sent_again_is_notified_again(quiet: Stores) -> None:
    a = await quiet(poll_interval=QUIET)
    b = await quiet()
    got: list[str] = []
    a.on_cancel(task_ids(got))
    await a.create(make_task("run", S.WORKING))
    listener = await deafen(a)
    assert await b.request_cancel(ask("run")) == a.process_id  # its notification is lost
    assert listener._conn is not None
    await listener._conn.execute(f'LISTEN "{a._target.cancel_channel}"')  # a hears again
    assert await b.request_cancel(ask("run")) == a.process_id  # still waiting: notified again
    await until(lambda: got == ["run"])
    assert await b.request_cancel(ask("run")) == a.process_id  # taken: written and sent again
    await until(lambda: got == ["run", "run"])  # the server's Peers tells the repeat apart


async def test_a_request_waits_for_the_first_callback(quiet: Stores) -> None:
    a = await quiet(poll_interval=QUIET)
    b = await quiet()
    await a.create(make_task("run", S.WORKING))
    assert await b.request_cancel(ask("run")) == a.process_id
    assert await a.poll_cancels() == []  # nobody to give it to: it stays
    got: list[str] = []
    a.on_cancel(task_ids(got))
    await until(lambda: got == ["run"])


async def test_a_request_whose_lease_ended_is_tidied_by_the_scan(
    quiet: Stores, admin: asyncpg.Connection, postgres_schema: str
) -> None:
    a = await quiet()
    b = await quiet()
    await a.create(make_task("run", S.WORKING))
    assert await b.request_cancel(ask("run")) == a.process_id
    await a.append("run", [status(S.COMPLETED)])  # finished before it looked
    assert await requests_left(admin, postgres_schema) == 1
    assert await b.take_over() == []
    assert await requests_left(admin, postgres_schema) == 0


async def test_a_failing_callback_does_not_lose_the_others(quiet: Stores) -> None:
    a = await quiet(poll_interval=QUIET)
    b = await quiet()
    got: list[str] = []

    def broken(request: CancelRequest) -> None:
        raise RuntimeError("boom")

    a.on_cancel(broken)
    a.on_cancel(task_ids(got))
    for task_id in ("t1", "t2"):
        await a.create(make_task(task_id, S.WORKING))
        assert await b.request_cancel(ask(task_id)) == a.process_id
    await until(lambda: sorted(got) == ["t1", "t2"])


@pytest.fixture
def clock() -> LeaseClock:
    return LeaseClock()


async def two(stores: Stores, clock: LeaseClock) -> tuple[PostgresTaskStore, PostgresTaskStore]:
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
        f" DROP INDEX {s}.push_outbox_fresh, {s}.push_outbox_retried;"  # version 4's
        f" ALTER TABLE {s}.cancel_requests DROP CONSTRAINT cancel_requests_pkey,"
        " DROP COLUMN id, DROP COLUMN asker, DROP COLUMN metadata, ADD PRIMARY KEY (task_id);"
        f" UPDATE {s}.task_leases SET expires_at = 'infinity';"  # still held, as by a live v2 process
        f" INSERT INTO {s}.cancel_requests VALUES ('run', '{holder}', 1);"
        f" UPDATE {s}.schema_version SET version = 2"
    )
    upgraded = PostgresTaskStore(
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
