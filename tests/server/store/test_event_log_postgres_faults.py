"""Faults of PostgreSQL under the store: a stalled or cut connection, a restart, a stop.

The stalls and cuts go through :class:`~fault_proxy.FaultProxy` in front of the test server
(only the store under test is affected); restarts and stops happen to a throwaway cluster of
this module (``pg_cluster``). Every fault must give ``StoreUnavailableError`` within the
deadlines, lose nothing committed, log one warning when the database goes and one when it is
back, and leave leases to the normal rules: a process whose heartbeats fail stops its runs
before its leases expire (the fence), and a lease whose release failed is not renewed. Waits
poll with generous deadlines; only the latencies under test are measured.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any

import asyncpg
import pytest
from fault_proxy import FaultProxy, through
from pg_stores import DEADLINE
from pg_support import Cluster, new_schema
from test_event_log import chunk, make_task

from a2a_wire.server.store import PostgresTaskStore, StoreUnavailableError
from a2a_wire.types import TaskState

S = TaskState

STATEMENT = 1.0
"""The stores' statement, connect and acquire timeouts here (seconds)."""

SLACK = 1.0
"""What a stalled call may take beyond the statement timeout."""

# With -n, on the worker of the suites that load the machine: the latencies measured here are
# not those of a machine that also runs the database fault suite (tests/conftest.py).
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("heavy")]

DOWN = "PostgreSQL is unavailable"
BACK = "PostgreSQL is available again"

Opener = Callable[..., Awaitable[PostgresTaskStore]]


@pytest.fixture
async def opener() -> AsyncIterator[Opener]:
    """Opens stores with short deadlines; closes them after the test."""
    async with AsyncExitStack() as stack:

        async def open_store(dsn: str, schema: str, **options: Any) -> PostgresTaskStore:
            for name in ("statement_timeout", "connect_timeout", "acquire_timeout"):
                options.setdefault(name, STATEMENT)
            options.setdefault("heartbeat_seconds", None)
            store = PostgresTaskStore(dsn, schema=schema, **options)
            await store.open()
            stack.push_async_callback(store.close)
            return store

        yield open_store


async def timed(call: Awaitable[object]) -> float:
    """Seconds ``call`` took to raise StoreUnavailableError (it must)."""
    started = time.monotonic()
    with pytest.raises(StoreUnavailableError) as raised:
        await call
    assert raised.value.__cause__ is not None  # translated from the driver's exception
    return time.monotonic() - started


async def eventually(call: Callable[[], Awaitable[object]]) -> object:
    """``call()``'s result once it stops raising StoreUnavailableError (generous deadline)."""
    async with asyncio.timeout(DEADLINE):
        while True:
            try:
                return await call()
            except StoreUnavailableError:
                await asyncio.sleep(0.1)


def outage_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage().split(" (")[0].split(" after")[0]
        for r in caplog.records
        if r.name == "a2a_wire.server.store" and r.getMessage().startswith((DOWN, BACK))
    ]


async def until_back(store: PostgresTaskStore, caplog: pytest.LogCaptureFixture) -> None:
    """Ping ``store`` until its outage log says the database is back (generous deadline)."""
    async with asyncio.timeout(DEADLINE):
        while BACK not in outage_lines(caplog):
            await store.ping()
            await asyncio.sleep(0.1)


async def test_a_stalled_connection_answers_unavailable_within_the_statement_timeout(
    proxy: FaultProxy, postgres_dsn: str, postgres_schema: str, opener: Opener
) -> None:
    store = await opener(through(proxy, postgres_dsn), postgres_schema)
    await store.create(make_task("t", S.WORKING))
    proxy.stall()
    latencies = {
        "get": await timed(store.get("t")),
        "append": await timed(store.append("t", [chunk("a", "x", append=False)])),
        "ping": await timed(store.ping()),
        "get again": await timed(store.get("t")),  # a new connection: the connect timeout
    }
    print(f"stalled calls, seconds: {latencies}")
    assert max(latencies.values()) < STATEMENT + SLACK
    assert min(latencies.values()) >= STATEMENT * 0.9  # the deadline, not a refusal
    await proxy.heal()
    task = await eventually(lambda: store.get("t"))
    assert task is not None
    await store.ping()


async def test_a_cut_answers_unavailable_at_once_and_heals_with_nothing_lost(
    proxy: FaultProxy,
    postgres_dsn: str,
    postgres_schema: str,
    opener: Opener,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, "a2a_wire.server.store")
    store = await opener(through(proxy, postgres_dsn), postgres_schema)
    for n in range(5):
        await store.create(make_task(f"t{n}", S.WORKING))
        await store.append(f"t{n}", [chunk("a", f"{n}", append=False)])
    await proxy.cut()
    latencies = [
        await timed(store.get("t0")),
        await timed(store.append("t1", [chunk("a", "y")])),
        await timed(store.create(make_task("late", S.WORKING))),
        await timed(store.list_push_configs("t0")),
        await timed(store.ping()),
    ]
    print(f"calls during a cut, seconds: {latencies}")
    assert max(latencies) < STATEMENT  # refused, not waited for
    await proxy.heal()
    await eventually(store.ping)
    for n in range(5):
        task = await store.get(f"t{n}")
        assert task is not None and task.artifacts[0].parts[0].text == f"{n}"
    assert await store.get("late") is None
    await store.append("t1", [chunk("a", "z")])
    await until_back(store, caplog)  # a success after the quiet period (two statement timeouts)
    assert outage_lines(caplog) == [DOWN, BACK]


async def test_a_restart_of_the_server_gives_unavailable_then_everything_is_there(
    pg_cluster: Cluster, opener: Opener
) -> None:
    store = await opener(pg_cluster.dsn, new_schema(), statement_timeout=2 * STATEMENT)
    for n in range(5):
        await store.create(make_task(f"t{n}", S.WORKING))
    outcomes = await during(pg_cluster.restart, lambda: store.get("t0"))
    assert outcomes["unavailable"] > 0 and outcomes["other"] == 0, outcomes
    await eventually(store.ping)
    assert [await store.get(f"t{n}") is not None for n in range(5)] == [True] * 5
    await store.append("t0", [chunk("a", "after", append=False)])


async def test_a_stop_of_the_server_gives_unavailable_until_it_is_started(
    pg_cluster: Cluster, opener: Opener
) -> None:
    store = await opener(pg_cluster.dsn, new_schema())
    for n in range(5):
        await store.create(make_task(f"t{n}", S.WORKING))
        await store.append(f"t{n}", [chunk("a", f"{n}", append=False)])

    async def stop_a_while() -> None:
        await asyncio.to_thread(pg_cluster.stop_server)
        latencies = [await timed(store.get("t0")) for _ in range(3)]
        latencies.append(await timed(store.append("t0", [chunk("a", "x")])))
        print(f"calls while stopped, seconds: {latencies}")
        assert max(latencies) < STATEMENT + SLACK
        await asyncio.sleep(3.0)  # the short stop (the is 30 s: the same path)
        await asyncio.to_thread(pg_cluster.start_server)

    await stop_a_while()
    await eventually(store.ping)
    for n in range(5):
        task = await store.get(f"t{n}")
        assert task is not None and task.artifacts[0].parts[0].text == f"{n}"


async def during(
    fault: Callable[[], None], call: Callable[[], Awaitable[object]]
) -> dict[str, int]:
    """Run ``fault`` in a thread and ``call`` over and over meanwhile; count the outcomes."""
    outcomes = {"ok": 0, "unavailable": 0, "other": 0}
    done = asyncio.ensure_future(asyncio.to_thread(fault))
    while not done.done():
        try:
            await call()
            outcomes["ok"] += 1
        except StoreUnavailableError:
            outcomes["unavailable"] += 1
        except Exception as exc:  # counted and named: the test says none may come
            outcomes["other"] += 1
            outcomes[repr(exc)] = outcomes.get(repr(exc), 0) + 1
        await asyncio.sleep(0.02)
    await done
    return outcomes


async def lease_expiry(admin: asyncpg.Connection, schema: str, task_id: str) -> float | None:
    value = await admin.fetchval(
        f"SELECT expires_at FROM {schema}.task_leases WHERE task_id = $1", task_id
    )
    return None if value is None else float(value)


async def until_failed(store: PostgresTaskStore, task_id: str) -> None:
    """Take over (as any process may) until the task is FAILED."""
    async with asyncio.timeout(DEADLINE):
        while True:
            await store.take_over()
            task = await store.get(task_id)
            assert task is not None and task.status is not None
            if task.status.state == S.FAILED:
                return
            await asyncio.sleep(0.1)


async def test_a_stalled_heartbeat_fences_before_the_leases_expire(
    proxy: FaultProxy,
    postgres_dsn: str,
    postgres_schema: str,
    opener: Opener,
    admin: asyncpg.Connection,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, "a2a_wire.server.store")
    stalled = await opener(
        through(proxy, postgres_dsn), postgres_schema, lease_seconds=3.0, heartbeat_seconds=0.5
    )
    fenced: dict[str, float] = {}
    stalled.on_lease_lost(lambda task_id: fenced.setdefault(task_id, time.time()))
    await stalled.create(make_task("a", S.WORKING))
    await stalled.create(make_task("b", S.WORKING))
    proxy.stall()
    async with asyncio.timeout(DEADLINE):
        while len(fenced) < 2:
            await asyncio.sleep(0.05)
    assert not stalled.holds("a") and not stalled.holds("b")
    for task_id, at in fenced.items():  # the lease rows by the database's clock (same host)
        expiry = await lease_expiry(admin, postgres_schema, task_id)
        assert expiry is not None and at < expiry, (task_id, at, expiry)
        print(f"fenced {task_id} {expiry - at:.2f} s before its lease expired")
    fence_lines = [r for r in caplog.records if "no heartbeat reached" in r.getMessage()]
    assert len(fence_lines) == 1
    other = await opener(postgres_dsn, postgres_schema)
    await until_failed(other, "a")
    await until_failed(other, "b")
    await proxy.heal()
    await eventually(stalled.ping)
    await stalled.create(make_task("c", S.WORKING))  # after the outage: leases as usual
    assert stalled.holds("c")
    assert await other.lease_holder("c") == stalled.process_id


async def test_a_lease_taken_while_heartbeats_fail_is_fenced_only_when_its_own_time_comes(
    postgres_dsn: str, postgres_schema: str, opener: Opener, admin: asyncpg.Connection
) -> None:
    store = await opener(postgres_dsn, postgres_schema, lease_seconds=3.0, heartbeat_seconds=0.5)
    fenced: dict[str, float] = {}
    loop = asyncio.get_running_loop()
    store.on_lease_lost(lambda task_id: fenced.setdefault(task_id, loop.time()))
    await store.create(make_task("a", S.WORKING))
    fence = store._fence  # noqa: SLF001 - the margins under test
    async with admin.transaction():  # heartbeats wait for the lock and fail; writes go on
        await admin.execute(f"LOCK TABLE {postgres_schema}.processes IN ACCESS EXCLUSIVE MODE")
        async with asyncio.timeout(DEADLINE):
            while "a" not in fenced:
                await asyncio.sleep(0.05)
        taken = loop.time()
        await store.create(make_task("c", S.WORKING))  # the database answers writes again
        assert store.holds("c")
        async with asyncio.timeout(DEADLINE):
            while "c" not in fenced:
                await asyncio.sleep(0.05)
        # Its own time, less one firing at most (leases due before the next one go together).
        assert fenced["c"] - taken >= fence.after - fence.again, "fenced long before its time"
        expiry = await lease_expiry(admin, postgres_schema, "c")
        assert expiry is not None and time.time() < expiry  # still before the lease ran out


async def test_a_lease_whose_release_failed_is_not_renewed_and_is_taken_over(
    proxy: FaultProxy,
    postgres_dsn: str,
    postgres_schema: str,
    opener: Opener,
    admin: asyncpg.Connection,
) -> None:
    store = await opener(
        through(proxy, postgres_dsn), postgres_schema, lease_seconds=6.0, heartbeat_seconds=0.5
    )
    await store.create(make_task("ended", S.WORKING))
    await store.create(make_task("live", S.WORKING))
    await proxy.cut()
    await timed(store.release("ended"))
    assert not store.holds("ended") and store.holds("live")
    await proxy.heal()
    await eventually(store.ping)
    left = await lease_expiry(admin, postgres_schema, "ended")
    live = await lease_expiry(admin, postgres_schema, "live")
    async with asyncio.timeout(DEADLINE):  # two beats later the live lease has moved on
        while (await lease_expiry(admin, postgres_schema, "live") or 0) <= (live or 0) + 1.0:
            await asyncio.sleep(0.1)
    assert await lease_expiry(admin, postgres_schema, "ended") == left
    other = await opener(postgres_dsn, postgres_schema)
    await until_failed(other, "ended")
    assert store.holds("live") and await other.lease_holder("live") == store.process_id
