"""What the PostgreSQL event log store adds to the contract (test_event_log.py runs that on it).

Several stores on one schema stand for several processes (each has its own pool and its own
listening connection): migration on open under the advisory lock, appends serialised per task
across stores, notifications between stores, the listening connection's reconnect, the polling
fallback, recovery on open as a takeover, and outbox lanes found whatever order numbers commit
in. Leases, cancel requests, delivery claims and the statements each call sends (round trips)
have files of their own (``test_event_log_postgres_*.py``). Every test has a schema of its own.
"""

from __future__ import annotations

import asyncio

import asyncpg
import pytest
import yarl
from pg_stores import DEADLINE, Stores, until
from test_event_log import chunk, make_task, sequential, status, whole_log

from a2a_wire._protocol.tasks import InvalidTransitionError
from a2a_wire.server.store import EventKind, PostgresTaskStore, migrate
from a2a_wire.server.store.postgresql._schema import SCHEMA_VERSION
from a2a_wire.types import TaskPushNotificationConfig, TaskState

S = TaskState


async def woken_only(store: PostgresTaskStore, task_id: str) -> bool:
    """Wait on the store's waiters with a check that is never ready: only a wake ends it."""

    async def never() -> bool:
        return False

    return await store._waiters.wait(task_id, never, DEADLINE)


async def wake_on_next_notification(
    store: PostgresTaskStore, admin: asyncpg.Connection, task_id: str
) -> asyncio.Future[bool]:
    """A :func:`woken_only` wait on ``task_id`` that notifications sent so far cannot end.

    A marker notification is sent and seen first: the listener gets notifications in order, so
    the earlier ones (of the task's creation, say) have been handled by then.
    """
    marker = asyncio.ensure_future(woken_only(store, "marker"))
    await until(lambda: "marker" in store._waiters._futures)
    await admin.execute("SELECT pg_notify($1, '0 marker')", f"{store._schema}_events")
    assert await marker
    woken = asyncio.ensure_future(woken_only(store, task_id))
    await until(lambda: task_id in store._waiters._futures)
    return woken


# -- schema and migration -------------------------------------------------------------------


async def test_stores_opening_together_on_a_fresh_schema_all_open(
    stores: Stores, admin: asyncpg.Connection, postgres_schema: str
) -> None:
    opened = await asyncio.gather(*(stores(recover=False) for _ in range(4)))
    version = await admin.fetchval(f"SELECT version FROM {postgres_schema}.schema_version")
    assert version == SCHEMA_VERSION
    await opened[0].create(make_task("t1"))
    assert [await s.get("t1") for s in opened] == [make_task("t1")] * 4


async def test_migrate_creates_once_and_refuses_a_newer_schema(
    postgres_dsn: str, postgres_schema: str, admin: asyncpg.Connection
) -> None:
    assert await migrate(postgres_dsn, schema=postgres_schema) == (0, SCHEMA_VERSION)
    assert await migrate(postgres_dsn, schema=postgres_schema) == (SCHEMA_VERSION, SCHEMA_VERSION)
    await admin.execute(f"UPDATE {postgres_schema}.schema_version SET version = 99")
    with pytest.raises(RuntimeError, match="version 99, newer"):
        await migrate(postgres_dsn, schema=postgres_schema)
    store = PostgresTaskStore(postgres_dsn, schema=postgres_schema)
    with pytest.raises(RuntimeError, match="newer"):
        await store.open()
    with pytest.raises(RuntimeError, match="not open"):
        await store.get("t1")


async def test_a_role_that_may_not_change_the_schema_opens_a_current_one(
    postgres_dsn: str, postgres_schema: str, admin: asyncpg.Connection
) -> None:
    await migrate(postgres_dsn, schema=postgres_schema)
    role = f"{postgres_schema}_app"
    await admin.execute(f"CREATE ROLE {role} LOGIN")
    try:
        await admin.execute(f"REVOKE CREATE ON SCHEMA public FROM {role}")
        await admin.execute(f"GRANT USAGE ON SCHEMA {postgres_schema} TO {role}")
        await admin.execute(
            f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {postgres_schema} TO {role}"
        )
        dsn = yarl.URL(postgres_dsn).with_user(role)
        store = PostgresTaskStore(str(dsn), schema=postgres_schema)
        await store.open()
        try:
            await store.create(make_task("t1"))
            assert (await store.append("t1", [chunk("a", "x")])).events[0].seq == 2
        finally:
            await store.close()
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await migrate(str(dsn), schema=f"{postgres_schema}_other")
    finally:
        await admin.execute(f"DROP OWNED BY {role}")
        await admin.execute(f"DROP ROLE {role}")


def test_settings_are_checked() -> None:
    for schema in ("A2A", "1abc", "a-b", "x" * 49, "a;drop"):
        with pytest.raises(ValueError, match="schema name"):
            PostgresTaskStore("postgresql://h/db", schema=schema)
    with pytest.raises(ValueError):
        PostgresTaskStore("postgresql://h/db", pool_size=0)
    with pytest.raises(ValueError):
        PostgresTaskStore("postgresql://h/db", poll_interval=0)


# -- several stores on one schema -----------------------------------------------------------


async def test_appends_from_two_stores_to_one_task_stay_gapless(stores: Stores) -> None:
    first, second = await stores(pool_size=3), await stores(pool_size=3)
    await first.create(make_task("t1"))
    numbers: list[int] = []

    async def agent(store: PostgresTaskStore, tag: str) -> None:
        for i in range(30):
            done = await store.append("t1", [chunk("a", f"{tag}{i}")])
            numbers.extend(event.seq for event in done.events)

    await asyncio.gather(agent(first, "x"), agent(second, "y"), agent(first, "z"))
    assert sorted(numbers) == list(range(2, 92))
    log = await whole_log(second, "t1")
    assert [event.seq for event in log] == list(range(1, 92))
    assert await first.get("t1") == await second.get("t1") == sequential(log)


async def test_an_event_is_checked_against_the_state_another_store_committed(
    stores: Stores,
) -> None:
    first, second = await stores(), await stores()
    await first.create(make_task("t1"))
    await second.append("t1", [chunk("a", "x")])  # second now remembers the task as WORKING
    await first.append("t1", [status(S.COMPLETED)])
    with pytest.raises(InvalidTransitionError):
        await second.append("t1", [chunk("a", "late")])
    await first.create(make_task("t2", S.INPUT_REQUIRED))
    await second.append("t2", [chunk("a", "x")])  # second remembers INPUT_REQUIRED
    await first.append("t2", [status(S.WORKING)])
    done = await second.append("t2", [status(S.COMPLETED)])  # legal only after first's event
    assert [event.seq for event in done.events] == [4]
    assert (await whole_log(first, "t2"))[-1].seq == 4


async def test_a_commit_in_one_store_wakes_readers_of_another(
    stores: Stores, admin: asyncpg.Connection
) -> None:
    writer, reader = await stores(), await stores(poll_interval=DEADLINE)
    await writer.create(make_task("t1"))
    woken = await wake_on_next_notification(reader, admin, "t1")
    assert not woken.done()
    await writer.append("t1", [chunk("a", "x")])
    assert await woken
    assert await reader.wait_events("t1", 1, timeout=DEADLINE)
    got = await reader.read_events("t1", 1)
    assert got is not None and [event.kind for event in got.events] == [EventKind.ARTIFACT]


async def test_the_notification_carries_only_the_number_and_the_task_id(
    stores: Stores, postgres_dsn: str, postgres_schema: str
) -> None:
    store = await stores()
    seen: asyncio.Queue[str] = asyncio.Queue()
    conn = await asyncpg.connect(postgres_dsn)
    try:
        await conn.add_listener(f"{postgres_schema}_events", lambda *args: seen.put_nowait(args[3]))
        await store.create(make_task("t1"))
        await store.append("t1", [chunk("a", "x"), status(S.WORKING, "go")])
        await store.delete_task("t1")
        got = [await asyncio.wait_for(seen.get(), DEADLINE) for _ in range(3)]
    finally:
        await conn.close()
    assert got == ["1 t1", "3 t1", "0 t1"]


async def test_a_task_id_too_long_to_notify_is_found_by_polling(stores: Stores) -> None:
    writer, reader = await stores(), await stores(poll_interval=0.05)
    long_id = "t" * 5000
    await writer.create(make_task(long_id))
    waiting = asyncio.ensure_future(reader.wait_events(long_id, 1, timeout=DEADLINE))
    await writer.append(long_id, [chunk("a", "x")])
    assert await waiting
    assert [e.seq for e in await whole_log(reader, long_id)] == [1, 2]


async def test_lost_notifications_only_cost_a_poll(stores: Stores) -> None:
    writer, reader = await stores(), await stores(poll_interval=0.05)
    await writer.create(make_task("t1"))
    listener = reader._listener
    assert listener is not None and listener._conn is not None
    await listener._conn.execute("UNLISTEN *")  # every notification from now on is lost
    waiting = asyncio.ensure_future(reader.wait_events("t1", 1, timeout=DEADLINE))
    await writer.append("t1", [chunk("a", "x")])
    assert await waiting


async def test_the_listening_connection_comes_back_after_its_backend_is_killed(
    stores: Stores, admin: asyncpg.Connection
) -> None:
    writer, reader = await stores(), await stores(poll_interval=DEADLINE)
    await writer.create(make_task("t1"))
    listener = reader._listener
    assert listener is not None
    old = listener.server_pid
    waiting = asyncio.ensure_future(reader.wait_events("t1", 1, timeout=DEADLINE))
    assert await admin.fetchval("SELECT pg_terminate_backend($1)", old)
    await until(lambda: listener.reconnects == 1)
    assert listener.server_pid not in (None, old)
    await writer.append("t1", [chunk("a", "x")])
    assert await waiting  # the wait in progress during the outage ends (at the latest now)
    woken = await wake_on_next_notification(reader, admin, "t1")
    await writer.append("t1", [chunk("a", "y")])
    assert await woken  # notifications arrive again on the new connection


# -- recovery and the outbox ----------------------------------------------------------------


async def test_opening_a_store_leaves_a_live_process_s_running_tasks_alone(
    stores: Stores, postgres_dsn: str, postgres_schema: str
) -> None:
    first = await stores()
    await first.create(make_task("run", S.WORKING))
    joining = await stores(recover=True, heartbeat_seconds=None)  # recovery is the takeover scan
    got = await joining.get("run")
    assert got is not None and got.status is not None and got.status.state == S.WORKING
    await first.close()  # its leases expire at once
    restarted = PostgresTaskStore(postgres_dsn, schema=postgres_schema, heartbeat_seconds=None)
    try:
        assert await restarted.open() == ["run"]
    finally:
        await restarted.close()
    got = await joining.get("run")
    assert got is not None and got.status is not None and got.status.state == S.FAILED


async def test_a_lane_that_commits_after_a_higher_number_is_still_found(
    stores: Stores, admin: asyncpg.Connection, postgres_schema: str
) -> None:
    """Outbox writes take no lock wider than their task, so numbers may commit out of order."""
    store = await stores()
    for task_id in ("t1", "t3"):
        config = TaskPushNotificationConfig(id="p", task_id=task_id, url="https://h/x")
        await store.create(make_task(task_id), push_configs=[config])
    held = admin.transaction()
    await held.start()
    await admin.execute(
        f"INSERT INTO {postgres_schema}.push_outbox (delivery_id, task_id, config_id, body,"
        " created_at) VALUES ('late', 't1', 'p', '{}', 0)"
    )
    pushed = await asyncio.wait_for(store.append("t3", [chunk("a", "y")], push=True), DEADLINE)
    assert pushed.outbox == 1  # committed while a lower number is still in flight
    lanes, seen = await store.pending_lanes(0)
    assert lanes == [("t3", "p")]
    await held.commit()
    lanes, _ = await store.pending_lanes(seen)
    assert sorted(lanes) == [("t1", "p"), ("t3", "p")]
    delivery = await store.next_delivery("t1", "p")
    assert delivery is not None and delivery.delivery_id == "late" and delivery.seq < seen
