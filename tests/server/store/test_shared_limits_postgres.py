"""The limits docs/scale-out.md calls shared hold across processes on one PostgreSQL schema.

Two stores on the test's schema stand for two server processes (``pg_stores.py``). Shown here:
``push.max_configs_per_task`` counted in the database, atomically (concurrent creates from both
stores never go past it), ``max_history_per_task`` applied whichever store appends, retention
applied by either process's sweeper to tasks the other wrote (and never to a task another
process holds the lease of), and ListTasks page tokens made by
one store accepted by the other when they share the key (refused when they do not). The limits
kept per process are documented as such and not tested across processes.
"""

from __future__ import annotations

import asyncio

import pytest
from pg_stores import LeaseClock, Stores

from a2a_wire.errors import InvalidParamsError
from a2a_wire.server import ServerSettings
from a2a_wire.server._retention import Retention
from a2a_wire.server.store import TaskQuery
from a2a_wire.types import (
    Message,
    Part,
    Role,
    Task,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)

DAY = 86400.0


def task(task_id: str, state: TaskState = TaskState.WORKING) -> Task:
    first = Message(message_id=f"m-{task_id}", role=Role.USER, parts=[Part(text="first")])
    return Task(id=task_id, context_id="c", status=TaskStatus(state=state), history=[first])


def config(config_id: str, task_id: str = "t1") -> TaskPushNotificationConfig:
    return TaskPushNotificationConfig(id=config_id, task_id=task_id, url="https://h/x")


def message(n: int) -> Message:
    return Message(message_id=f"u-{n}", role=Role.USER, parts=[Part(text=str(n))])


async def test_configs_per_task_are_counted_in_the_database_atomically(stores: Stores) -> None:
    a, b = await stores(), await stores()
    await a.create(task("t1"))
    limit = 3
    tries = [config(f"c{n}") for n in range(12)]
    stored = await asyncio.gather(
        *((a if n % 2 else b).put_push_config(c, limit=limit) for n, c in enumerate(tries))
    )
    assert sum(stored) == limit
    assert len(await a.list_push_configs("t1")) == limit
    assert len(await b.list_push_configs("t1")) == limit
    kept = (await b.list_push_configs("t1"))[0][1]
    assert await a.put_push_config(kept, limit=limit)  # a replacement always fits
    assert not await b.put_push_config(config("one-more"), limit=limit)
    assert await a.delete_push_config("t1", kept.id)
    assert await b.put_push_config(config("one-more"), limit=limit)  # room again, seen by B


async def test_history_limit_holds_whichever_process_appends(stores: Stores) -> None:
    limit = 4
    a, b = await stores(history_limit=limit), await stores(history_limit=limit)
    await a.create(task("t1"))
    for n in range(10):
        await (a if n % 2 else b).append("t1", [message(n)])
    for store in (a, b):
        got = await store.get("t1")
        assert got is not None
        texts = [m.parts[0].text for m in got.history]
        assert texts == ["first", "7", "8", "9"]  # the first and the newest, len == limit


async def test_either_process_sweeper_applies_retention(stores: Stores) -> None:
    clock = LeaseClock()  # state-change times of both stores and sweepers, moved by hand
    a, b = await stores(clock=clock), await stores(clock=clock)
    await a.create(task("done-a"))
    await a.append("done-a", [TaskStatusUpdateEvent(status=TaskStatus(state=TaskState.COMPLETED))])
    await b.create(task("done-b"))
    await b.append("done-b", [TaskStatusUpdateEvent(status=TaskStatus(state=TaskState.COMPLETED))])
    settings = ServerSettings(terminal_retention_seconds=DAY)
    nothing_runs: set[str] = set()
    sweep_b = Retention(b, settings, nothing_runs.__contains__, clock=clock)
    sweep_a = Retention(a, settings, nothing_runs.__contains__, clock=clock)
    clock.now += DAY + 1
    assert (await sweep_b.sweep()).deleted == 2  # B's sweeper deletes A's task too
    assert await a.get("done-a") is None and await a.get("done-b") is None
    assert (await sweep_a.sweep()).deleted == 0  # and A's finds nothing left to do


async def test_a_task_resumed_on_one_process_is_busy_for_the_others_sweeper(
    stores: Stores,
) -> None:
    clock = LeaseClock()
    a, b = await stores(clock=clock), await stores(clock=clock)
    await a.create(task("asks", TaskState.INPUT_REQUIRED))
    settings = ServerSettings(interrupted_retention_seconds=DAY)
    nothing_runs: set[str] = set()  # B's own runs: none
    sweep_b = Retention(b, settings, nothing_runs.__contains__, clock=clock)
    clock.now += DAY + 1
    assert await a.acquire("asks")  # A takes the lease for a follow-up it starts to run
    assert (await sweep_b.sweep()).deleted == 0
    assert await a.get("asks") is not None
    assert await a.release("asks")  # the follow-up did not start after all
    assert (await sweep_b.sweep()).deleted == 1


@pytest.mark.parametrize("shared", [True, False])
async def test_page_tokens_cross_processes_when_the_key_is_shared(
    stores: Stores, shared: bool
) -> None:
    key = b"k" * 32
    a = await stores(page_token_key=key)
    b = await stores(page_token_key=key if shared else b"other-key" * 4)
    for n in range(5):
        await a.create(task(f"t{n}"))
    first = await a.list(TaskQuery(page_size=2))
    assert first.next_page_token
    query = TaskQuery(page_size=2, page_token=first.next_page_token)
    if not shared:
        with pytest.raises(InvalidParamsError):
            await b.list(query)
        return
    second = await b.list(query)
    assert [t.id for t in second.tasks] == [t.id for t in (await a.list(query)).tasks]
    seen = {t.id for t in first.tasks} | {t.id for t in second.tasks}
    assert len(seen) == 4
