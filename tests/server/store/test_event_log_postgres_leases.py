"""Leases, heartbeats and takeover of the PostgreSQL store, with several stores as processes.

Lease expiry follows a :class:`~pg_stores.LeaseClock` the test moves, and the stores' keepers
do not beat (``heartbeat_seconds=None``) unless a test is about the keeper: no lease expires
because the machine was slow.
"""

from __future__ import annotations

import asyncio
import logging

import asyncpg
import pytest
from pg_stores import DEADLINE, LeaseClock, Stores
from test_event_log import chunk, config, make_task, status, whole_log

from a2a_wire import codec
from a2a_wire.server.store import LEASE_SECONDS, PROCESS_LOST_MESSAGE, EventKind, PostgresTaskStore
from a2a_wire.types import StreamResponse, TaskState

S = TaskState


@pytest.fixture
def clock() -> LeaseClock:
    return LeaseClock()


async def processes(stores: Stores, clock: LeaseClock, count: int) -> list[PostgresTaskStore]:
    return [await stores(lease_clock=clock, heartbeat_seconds=None) for _ in range(count)]


async def state_of(store: PostgresTaskStore, task_id: str) -> TaskState:
    task = await store.get(task_id)
    assert task is not None and task.status is not None
    return task.status.state


async def assert_lost(store: PostgresTaskStore, task_id: str) -> None:
    """The task was failed by a takeover: FAILED, with the lost-process message, as event 2+."""
    task = await store.get(task_id)
    assert task is not None and task.status is not None and task.status.state == S.FAILED
    assert task.status.message is not None
    assert task.status.message.parts[0].text == PROCESS_LOST_MESSAGE
    last = (await whole_log(store, task_id))[-1]
    assert last.kind is EventKind.STATUS
    frame = codec.decode(StreamResponse, last.body)
    assert frame.status_update is not None and frame.status_update.status == task.status


async def test_a_running_task_is_leased_to_the_store_that_created_it(
    stores: Stores, clock: LeaseClock
) -> None:
    a, b = await processes(stores, clock, 2)
    assert a.process_id != b.process_id
    await a.create(make_task("run", S.WORKING))
    await a.create(make_task("new", S.SUBMITTED))
    await a.create(make_task("ask", S.INPUT_REQUIRED))
    assert await b.lease_holder("run") == await b.lease_holder("new") == a.process_id
    assert await b.lease_holder("ask") is None
    assert not await b.acquire("run")
    assert await a.acquire("run")  # its own: renewed
    assert await b.acquire("ask")  # a follow-up about to resume it on b
    assert not await a.acquire("ask")
    assert not await a.acquire("nothing")
    assert await a.live_processes() == sorted([a.process_id, b.process_id])


async def test_the_lease_follows_the_state_whoever_appends(
    stores: Stores, clock: LeaseClock
) -> None:
    a, b = await processes(stores, clock, 2)
    lost: list[str] = []
    b.on_lease_lost(lost.append)
    await a.create(make_task("t1", S.WORKING))
    await a.append("t1", [status(S.INPUT_REQUIRED)])
    assert await a.lease_holder("t1") is None  # interrupted: nobody runs it
    await b.append("t1", [status(S.WORKING)])  # resumed on b without acquire()
    assert await a.lease_holder("t1") == b.process_id
    await b.append("t1", [chunk("a", "x")])  # no state change: the lease stays
    assert await b.heartbeat() == [] and lost == []
    await a.append("t1", [status(S.CANCELED)])  # ended elsewhere
    assert await a.lease_holder("t1") is None
    assert await b.heartbeat() == ["t1"] and lost == ["t1"]
    assert await b.heartbeat() == []


async def test_an_expired_lease_is_taken_over_once_and_a_renewed_one_never(
    stores: Stores, clock: LeaseClock
) -> None:
    a, b = await processes(stores, clock, 2)
    await a.create(make_task("run", S.WORKING), push_configs=[config("p", "run")])
    await a.create(make_task("ask", S.INPUT_REQUIRED))
    assert await a.acquire("ask")  # a follow-up was about to resume it
    await a.append("run", [chunk("a", "x")])
    clock.now += LEASE_SECONDS - 1
    assert await a.heartbeat() == []
    clock.now += LEASE_SECONDS - 1
    assert await b.take_over() == []  # renewed: still live
    clock.now += 2  # a stopped beating
    assert await b.take_over() == ["run"]
    await assert_lost(b, "run")
    assert [e.seq for e in await whole_log(b, "run")] == [1, 2, 3]
    delivery = await b.next_delivery("run", "p")
    assert delivery is not None and delivery.body == (await whole_log(b, "run"))[-1].body
    assert await state_of(b, "ask") == S.INPUT_REQUIRED  # interrupted: stays resumable
    assert await b.lease_holder("ask") is None and await b.acquire("ask")
    assert await b.take_over() == []
    assert sorted(await a.heartbeat()) == ["ask", "run"]  # a finds out it lost both


async def test_a_takeover_logs_one_line_per_dead_process(
    stores: Stores, clock: LeaseClock, caplog: pytest.LogCaptureFixture
) -> None:
    a, b, c = await processes(stores, clock, 3)
    for task_id in ("a1", "a2"):
        await a.create(make_task(task_id, S.WORKING))
    await a.create(make_task("ask", S.INPUT_REQUIRED))
    assert await a.acquire("ask")  # an expired lease of a task that is not failed
    await b.create(make_task("b1", S.SUBMITTED))
    clock.now += LEASE_SECONDS + 1
    with caplog.at_level(logging.INFO, logger="a2a_wire.server.store"):
        assert sorted(await c.take_over()) == ["a1", "a2", "b1"]
        assert await c.take_over() == []  # nothing more: no line
    lines = [r.getMessage() for r in caplog.records if "took over" in r.getMessage()]
    expected = {
        f"task store: took over from process {a.process_id}, whose lease expired: failed its 2"
        " running task(s), released 1 waiting for the client",
        f"task store: took over from process {b.process_id}, whose lease expired: failed its 1"
        " running task(s)",
    }
    assert len(lines) == 2 and set(lines) == expected
    assert {r.levelno for r in caplog.records if "took over" in r.getMessage()} == {logging.WARNING}


async def test_a_takeover_that_fails_nothing_logs_one_info_line(
    stores: Stores, clock: LeaseClock, caplog: pytest.LogCaptureFixture
) -> None:
    a, b = await processes(stores, clock, 2)
    await a.create(make_task("ask", S.INPUT_REQUIRED))
    assert await a.acquire("ask")  # a follow-up was about to resume it when a died
    clock.now += LEASE_SECONDS + 1
    with caplog.at_level(logging.INFO, logger="a2a_wire.server.store"):
        assert await b.take_over() == []
    records = [r for r in caplog.records if "took over" in r.getMessage()]
    assert [(r.levelno, r.getMessage()) for r in records] == [
        (
            logging.INFO,
            f"task store: took over from process {a.process_id}, whose lease expired: failed its 0"
            " running task(s), released 1 waiting for the client",
        )
    ]
    assert await b.acquire("ask")  # resumable here


async def test_a_lease_renewed_late_but_before_any_scan_is_kept(
    stores: Stores, clock: LeaseClock
) -> None:
    a, b = await processes(stores, clock, 2)
    await a.create(make_task("run", S.WORKING))
    clock.now += LEASE_SECONDS * 3  # a stalled; nobody scanned meanwhile
    assert await a.heartbeat() == []
    assert await b.take_over() == []
    assert await state_of(b, "run") == S.WORKING


async def test_exactly_one_store_takes_over_each_task(stores: Stores, clock: LeaseClock) -> None:
    a, b, c = await processes(stores, clock, 3)
    ids = [f"t{i}" for i in range(40)]
    for task_id in ids:
        await a.create(make_task(task_id, S.WORKING), push_configs=[config("p", task_id)])
    clock.now += LEASE_SECONDS + 1
    for _ in range(3):  # b and c scanning at once, more than once
        got_b, got_c = await asyncio.gather(b.take_over(), c.take_over())
        assert not set(got_b) & set(got_c)
        if got_b or got_c:
            assert sorted(got_b + got_c) == sorted(ids)
    for task_id in ids:
        log = await whole_log(c, task_id)
        assert [e.seq for e in log] == [1, 2]  # one FAILED status each, no second one
        await assert_lost(c, task_id)
        lanes_row = await c.next_delivery(task_id, "p")
        assert lanes_row is not None and lanes_row.body == log[-1].body
        await c.delivery_done(lanes_row.seq)
        assert await c.next_delivery(task_id, "p") is None  # one outbox row, not two


async def test_a_stream_on_another_store_ends_with_the_takeover(
    stores: Stores, clock: LeaseClock
) -> None:
    a, b, c = await processes(stores, clock, 3)
    reader = await stores(lease_clock=clock, heartbeat_seconds=None, poll_interval=DEADLINE)
    await a.create(make_task("run", S.WORKING))
    waiting = asyncio.ensure_future(reader.wait_events("run", 1, timeout=DEADLINE))
    clock.now += LEASE_SECONDS + 1
    assert await c.take_over() == ["run"]
    assert await asyncio.wait_for(waiting, DEADLINE)  # woken by the notification
    got = await reader.read_events("run", 1)
    assert got is not None and [e.kind for e in got.events] == [EventKind.STATUS]
    await assert_lost(b, "run")


async def test_release_hands_a_running_task_to_the_takeover_and_frees_an_interrupted_one(
    stores: Stores, clock: LeaseClock
) -> None:
    a, b = await processes(stores, clock, 2)
    await a.create(make_task("run", S.WORKING))
    await a.create(make_task("ask", S.INPUT_REQUIRED))
    assert await a.acquire("ask")
    assert await a.release("ask") and await b.acquire("ask")  # free at once
    assert not await b.release("run")  # not b's
    assert await a.release("run")
    assert await a.heartbeat() == []  # a released lease is not renewed
    assert await b.take_over() == ["run"]  # expired at once: no clock moved
    await assert_lost(b, "run")


async def test_closing_a_store_expires_its_leases_and_ends_its_process_row(
    stores: Stores, clock: LeaseClock
) -> None:
    a, b = await processes(stores, clock, 2)
    await a.create(make_task("run", S.WORKING))
    await a.close()
    assert await b.live_processes() == [b.process_id]
    assert await b.lease_holder("run") is None and not await b.acquire("run")
    assert await b.take_over() == ["run"]


async def test_a_store_opened_under_a_used_process_id_inherits_no_lease(
    stores: Stores, clock: LeaseClock
) -> None:
    old = await stores(lease_clock=clock, heartbeat_seconds=None, process_id="web-1")
    await old.create(make_task("run", S.WORKING))  # then "web-1" is killed and started again
    new = await stores(lease_clock=clock, heartbeat_seconds=None, process_id="web-1", recover=True)
    await assert_lost(new, "run")  # failed by the new one's open, no clock moved
    assert await new.lease_holder("run") is None


async def test_deleting_a_task_ends_its_lease(stores: Stores, clock: LeaseClock) -> None:
    a, b = await processes(stores, clock, 2)
    await a.create(make_task("run", S.WORKING))
    assert await a.delete_task("run")
    assert await a.lease_holder("run") is None
    clock.now += LEASE_SECONDS + 1
    assert await b.take_over() == [] and await a.heartbeat() == []


async def test_the_keeper_beats_and_takes_over_a_process_that_stopped(stores: Stores) -> None:
    """Real time, short settings; only "eventually" is asserted, within a generous deadline."""
    options = {"lease_seconds": 0.6, "heartbeat_seconds": 0.2}
    a, b = await stores(**options), await stores(**options)
    await a.create(make_task("run", S.WORKING))
    await a._stop_keeper()  # a stops beating but keeps its lease row: as if it died
    async with asyncio.timeout(DEADLINE):
        while await state_of(b, "run") != S.FAILED:
            await asyncio.sleep(0.05)
    await assert_lost(b, "run")


async def test_upgrading_a_version_1_schema_fails_its_running_tasks_once(
    stores: Stores, admin: asyncpg.Connection, postgres_dsn: str, postgres_schema: str
) -> None:
    """Version 1 had no leases: its running tasks get expired ones, so a takeover fails them."""
    old = await stores(heartbeat_seconds=None)
    await old.create(make_task("run", S.WORKING))
    await old.create(make_task("ask", S.INPUT_REQUIRED))
    await old.close()
    s = postgres_schema
    await admin.execute(
        f"DROP TABLE {s}.processes, {s}.task_leases, {s}.cancel_requests, {s}.cancel_replies;"
        f" ALTER TABLE {s}.push_outbox DROP COLUMN claimed_by, DROP COLUMN claim_until;"
        f" DROP INDEX {s}.push_outbox_pending, {s}.push_outbox_fresh, {s}.push_outbox_retried;"
        f" UPDATE {s}.schema_version SET version = 1"
    )
    upgraded = PostgresTaskStore(postgres_dsn, schema=s, heartbeat_seconds=None)
    try:
        assert await upgraded.open() == ["run"]
        await assert_lost(upgraded, "run")
        assert await state_of(upgraded, "ask") == S.INPUT_REQUIRED
    finally:
        await upgraded.close()
