"""The contract of every event log store (a2a_wire.server.store._contract.log), run on each backend.

A new backend is done when it passes this file (and the other suites of this folder): add it to
``BACKENDS`` and to ``Backend.new`` in ``tests/store_support.py`` (PostgreSQL works in a schema
of its own per test, on the server of the ``postgres_dsn`` fixture). The Hypothesis state machine at the end drives
random appends, reads, compactions, deletions and reopenings against a model that keeps every
committed event, and checks after each step that the snapshot equals the plain sequential fold
of the log and that reading after any number gives exactly the rest of the log.
"""

from __future__ import annotations

import asyncio
import copy
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test
from store_support import MACHINE_BACKENDS, Backend

from a2a_wire import codec
from a2a_wire._protocol.states import is_settled
from a2a_wire._protocol.tasks import InvalidTransitionError, apply
from a2a_wire.errors import TaskNotFoundError
from a2a_wire.server.store import (
    EventKind,
    EventLogStore,
    LogEvent,
    LogInput,
    SQLiteTaskStore,
    TaskQuery,
    trim_history,
)
from a2a_wire.server.store._fold import events as _events
from a2a_wire.server.store._fold.events import fold
from a2a_wire.types import (
    Artifact,
    Message,
    Part,
    Role,
    StreamResponse,
    Task,
    TaskArtifactUpdateEvent,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
    Timestamp,
)

S = TaskState
BASE = 1_700_000_000
EPOCH = Timestamp()


def ts(seconds: int) -> Timestamp:
    return Timestamp(seconds=BASE + seconds)


def make_task(
    task_id: str, state: TaskState = S.WORKING, *, context: str = "c1", at: int = 0
) -> Task:
    first = Message(
        message_id=f"m-{task_id}", role=Role.USER, parts=[Part(text="hello")], task_id=task_id
    )
    first.context_id = context
    status = TaskStatus(state=state, timestamp=ts(at))
    return Task(id=task_id, context_id=context, status=status, history=[first])


def status(state: TaskState, text: str = "", at: int | None = None) -> TaskStatusUpdateEvent:
    note = (
        Message(message_id=f"s-{text}", role=Role.AGENT, parts=[Part(text=text)]) if text else None
    )
    stamp = ts(at) if at is not None else None
    return TaskStatusUpdateEvent(status=TaskStatus(state=state, message=note, timestamp=stamp))


def chunk(artifact_id: str, text: str, *, append: bool = True) -> TaskArtifactUpdateEvent:
    artifact = Artifact(artifact_id=artifact_id, parts=[Part(text=text)])
    return TaskArtifactUpdateEvent(artifact=artifact, append=append)


def user(text: str) -> Message:
    return Message(message_id=f"u-{text}", role=Role.USER, parts=[Part(text=text)])


def config(config_id: str, task_id: str) -> TaskPushNotificationConfig:
    return TaskPushNotificationConfig(id=config_id, task_id=task_id, url="https://h/x")


def sequential(events: Sequence[LogEvent], history_limit: int | None = None) -> Task:
    """The reference fold: event 1's task, then every later event applied in turn."""
    frames = [codec.decode(StreamResponse, event.body) for event in events]
    assert frames[0].task is not None
    task = frames[0].task
    for frame in frames[1:]:
        item = frame.status_update or frame.artifact_update or frame.message
        assert item is not None
        apply(task, item, now=EPOCH)
        trim_history(task, history_limit)
    return task


async def whole_log(store: EventLogStore, task_id: str, owner: str = "") -> list[LogEvent]:
    events: list[LogEvent] = []
    while True:
        got = await store.read_events(task_id, events[-1].seq if events else 0, owner=owner)
        assert got is not None and not got.from_snapshot
        if not got.events:
            return events
        events += got.events


# -- creating and appending ----------------------------------------------------------------


async def test_create_is_event_one_and_get_returns_the_task(store: EventLogStore) -> None:
    task = make_task("t1")
    done = await store.create(task, owner="alice")
    assert [(e.seq, e.kind) for e in done.events] == [(1, EventKind.TASK)]
    assert done.outbox == 0
    assert codec.loads(done.events[0].body) == {"task": task.to_dict()}
    assert await store.get("t1", owner="alice") == task
    snapshot = await store.snapshot("t1", owner="alice")
    assert snapshot is not None and snapshot.seq == 1 and snapshot.task == task


async def test_create_refuses_a_task_without_id_or_with_a_taken_one(store: EventLogStore) -> None:
    with pytest.raises(ValueError):
        await store.create(Task(context_id="c"))
    await store.create(make_task("t1"))
    with pytest.raises(ValueError):
        await store.create(make_task("t1"), owner="bob")


async def test_another_owner_sees_nothing(store: EventLogStore) -> None:
    await store.create(make_task("t1"), owner="alice")
    assert await store.get("t1", owner="bob") is None
    assert await store.snapshot("t1", owner="bob") is None
    assert await store.read_events("t1", 0, owner="bob") is None
    assert (await store.list(TaskQuery(), owner="bob")).total_size == 0
    assert await store.get("nope", owner="alice") is None


async def test_events_get_the_next_numbers_and_a_batch_is_consecutive(store: EventLogStore) -> None:
    await store.create(make_task("t1"))
    one = await store.append("t1", [chunk("a", "x", append=False)])
    batch = await store.append("t1", [chunk("a", "y"), status(S.WORKING, "busy"), user("more")])
    assert [e.seq for e in one.events] == [2]
    assert [e.seq for e in batch.events] == [3, 4, 5]
    kinds = [e.kind for e in batch.events]
    assert kinds == [EventKind.ARTIFACT, EventKind.STATUS, EventKind.MESSAGE]
    assert [e.streamed for e in batch.events] == [True, True, False]
    assert (one.state, batch.state) == (S.WORKING, S.WORKING)
    assert (await store.append("t1", [status(S.INPUT_REQUIRED)])).state == S.INPUT_REQUIRED
    log = await whole_log(store, "t1")
    assert [e.seq for e in log] == [1, 2, 3, 4, 5, 6]
    assert log[1:5] == [*one.events, *batch.events]


async def test_an_illegal_event_refuses_the_whole_batch(store: EventLogStore) -> None:
    await store.create(make_task("t1"))
    before = await store.get("t1")
    with pytest.raises(InvalidTransitionError):
        await store.append("t1", [chunk("a", "x"), status(S.COMPLETED), chunk("a", "late")])
    with pytest.raises(InvalidTransitionError):
        await store.append("t1", [status(S.SUBMITTED)])
    assert await store.get("t1") == before
    assert [e.seq for e in await whole_log(store, "t1")] == [1]
    assert [e.seq for e in (await store.append("t1", [chunk("a", "x")])).events] == [2]


async def test_create_with_a_first_turn_logs_it_as_events_two_on(store: EventLogStore) -> None:
    task = make_task("t1", S.SUBMITTED)
    turn: list[LogInput] = [status(S.WORKING, "go"), chunk("a", "x", append=False), user("hi")]
    done = await store.create(task, owner="alice", events=turn)
    assert [(e.seq, e.kind) for e in done.events] == [
        (1, EventKind.TASK),
        (2, EventKind.STATUS),
        (3, EventKind.ARTIFACT),
        (4, EventKind.MESSAGE),
    ]
    assert done.state == S.WORKING and done.task is None  # not settled: no fold handed over
    assert codec.loads(done.events[0].body) == {"task": task.to_dict()}
    log = await whole_log(store, "t1", owner="alice")
    assert log == done.events
    snapshot = await store.snapshot("t1", owner="alice")
    assert snapshot is not None and snapshot.seq == 4 and snapshot.task == sequential(log)
    assert [e.seq for e in (await store.append("t1", [chunk("a", "y")])).events] == [5]


async def test_create_with_a_settling_turn_hands_over_the_fold(store: EventLogStore) -> None:
    done = await store.create(make_task("t1"), events=[chunk("a", "x"), status(S.COMPLETED)])
    assert [e.seq for e in done.events] == [1, 2, 3] and done.state == S.COMPLETED
    log = await whole_log(store, "t1")
    assert await store.get("t1") == sequential(log)
    if done.task is not None:  # memory and SQLite fold in the same call (see Appended.task)
        assert done.task == sequential(log)
        done.task.history.append(user("not stored"))  # the caller owns it
        assert await store.get("t1") == sequential(log)
    with pytest.raises(InvalidTransitionError):
        await store.append("t1", [chunk("a", "late")])


async def test_the_fold_handed_over_shares_nothing_with_the_callers_objects(
    store: EventLogStore,
) -> None:
    """The memory and SQLite stores fold a new task from copies they keep (its shadow) rather
    than from its JSON: objects the caller changes after a write must not reach the fold."""
    task = make_task("t1", S.SUBMITTED)
    first = chunk("a", "x", append=False)
    first.metadata = {"k": ["v"]}
    await store.create(task, events=[first])
    task.history[0].parts[0].text = "changed after create"
    task.status = TaskStatus(state=S.FAILED)
    assert first.artifact is not None
    first.artifact.parts[0].text = "changed after the first turn"
    first.metadata["k"].append("w")
    last = status(S.WORKING, "go")
    await store.append("t1", [last])
    assert last.status is not None and last.status.message is not None
    last.status.message.parts[0].text = "changed after the append"
    done = await store.append("t1", [chunk("a", "y"), status(S.COMPLETED)])
    log = await whole_log(store, "t1")
    expected = sequential(log)
    assert expected.history[0].parts[0].text == "hello"
    assert expected.artifacts[0].parts[0].text == "x"
    if done.task is not None:
        assert done.task == expected
        done.task.artifacts[0].parts.append(Part(text="not stored"))
    assert await store.get("t1") == expected


async def test_create_with_an_illegal_turn_stores_nothing(store: EventLogStore) -> None:
    task = make_task("t1", S.SUBMITTED)
    with pytest.raises(InvalidTransitionError):
        await store.create(task, events=[chunk("a", "x"), status(S.SUBMITTED)])
    with pytest.raises(InvalidTransitionError):
        await store.create(task, push_configs=[config("p", "t1")], events=[status(S.UNSPECIFIED)])
    assert await store.get("t1") is None and await store.read_events("t1", 0) is None
    assert await store.get_push_config("t1", "p") is None
    assert (await store.list(TaskQuery())).total_size == 0
    assert [e.seq for e in (await store.create(task)).events] == [1]  # the id is still free


async def test_create_with_a_first_turn_puts_its_events_in_the_outbox(
    store: EventLogStore,
) -> None:
    turn: list[LogInput] = [chunk("a", "x"), user("q"), status(S.COMPLETED)]
    done = await store.create(
        make_task("t1"), push_configs=[config("p", "t1")], push=True, events=turn
    )
    assert done.outbox == 3  # the task, the chunk and the status; not the history message
    bodies = []
    while (delivery := await store.next_delivery("t1", "p")) is not None:
        bodies.append(delivery.body)
        await store.delivery_done(delivery.seq)
    assert bodies == [e.body for e in done.events if e.streamed or e.seq == 1]
    quiet = await store.create(make_task("t2"), push_configs=[config("p", "t2")], events=turn)
    assert quiet.outbox == 0


async def test_append_needs_a_task_and_an_event(store: EventLogStore) -> None:
    with pytest.raises(TaskNotFoundError):
        await store.append("nope", [chunk("a", "x")])
    await store.create(make_task("t1"))
    with pytest.raises(ValueError):
        await store.append("t1", [])


async def test_events_are_logged_as_applied(store: EventLogStore) -> None:
    await store.create(make_task("t1", context="ctx"))
    done = await store.append("t1", [status(S.WORKING, "go"), chunk("a", "x"), user("hi")])
    frames = [codec.decode(StreamResponse, e.body) for e in done.events]
    update = frames[0].status_update
    assert update is not None and update.task_id == "t1" and update.context_id == "ctx"
    assert update.status is not None and update.status.timestamp is not None  # given by apply
    assert update.status.message is not None and update.status.message.task_id == "t1"
    artifact = frames[1].artifact_update
    assert artifact is not None and (artifact.task_id, artifact.context_id) == ("t1", "ctx")
    assert frames[2].message is not None and frames[2].message.context_id == "ctx"


async def test_the_store_keeps_no_reference_to_what_it_was_given(store: EventLogStore) -> None:
    task = make_task("t1")
    event = chunk("a", "x", append=False)
    await store.create(task)
    await store.append("t1", [event])
    task.history[0].parts.append(Part(text="changed"))
    assert event.artifact is not None
    event.artifact.parts.append(Part(text="changed"))
    got = await store.get("t1")
    assert got is not None
    assert len(got.history[0].parts) == 1 and len(got.artifacts[0].parts) == 1
    got.artifacts[0].parts.clear()
    again = await store.get("t1")
    assert again is not None and len(again.artifacts[0].parts) == 1


# -- folding -------------------------------------------------------------------------------


async def test_many_chunks_fold_to_the_sequential_result(store: EventLogStore) -> None:
    """Past the fold threshold, with two interleaved artifacts, a replacement and a new start."""
    await store.create(make_task("t1"))
    text = "x" * 200
    for i in range(600):  # about 130 KB of events: folds on size at least once
        await store.append("t1", [chunk("a" if i % 3 else "b", f"{i}{text}", append=i > 1)])
        if i == 300:
            await store.append("t1", [chunk("b", "reset", append=False), status(S.WORKING, "half")])
    got = await store.get("t1")
    assert got == sequential(await whole_log(store, "t1"))
    assert got is not None and [a.artifact_id for a in got.artifacts] == ["b", "a"]
    assert len(got.artifacts[1].parts) == 400
    done = await store.append("t1", [status(S.COMPLETED)])
    snapshot = await store.snapshot("t1")
    assert snapshot is not None and snapshot.seq == done.events[-1].seq
    assert snapshot.task == sequential(await whole_log(store, "t1"))


async def test_history_limit_applies_to_the_fold(backend_kind: str, tmp_path: Path) -> None:
    backend = Backend(backend_kind, tmp_path, history_limit=3)
    try:
        store = await backend.open()
        await store.create(make_task("t1"))
        for i in range(5):
            await store.append("t1", [user(f"q{i}")])
        got = await store.get("t1")
        assert got is not None
        assert [m.message_id for m in got.history] == ["m-t1", "u-q3", "u-q4"]
        assert got == sequential(await whole_log(store, "t1"), history_limit=3)
    finally:
        await backend.close_all()


# -- reading the log -----------------------------------------------------------------------


async def test_read_after_any_number_gives_the_rest_in_pages(store: EventLogStore) -> None:
    await store.create(make_task("t1"))
    for i in range(9):
        await store.append("t1", [chunk("a", str(i))])
    log = await whole_log(store, "t1")
    assert [e.seq for e in log] == list(range(1, 11))
    for after in range(11):
        got = await store.read_events("t1", after, limit=4)
        assert got is not None and not got.from_snapshot
        assert got.events == log[after : after + 4]
    with pytest.raises(ValueError):
        await store.read_events("t1", -1)
    with pytest.raises(ValueError):
        await store.read_events("t1", 0, limit=0)


async def test_a_number_beyond_the_log_means_start_from_the_snapshot(store: EventLogStore) -> None:
    await store.create(make_task("t1"))
    got = await store.read_events("t1", 2)
    assert got is not None and got.from_snapshot and got.events == []


async def test_compaction_drops_old_events_in_batches(store: EventLogStore) -> None:
    await store.create(make_task("t1"))
    for i in range(9):
        await store.append("t1", [chunk("a", str(i))])
    log = await whole_log(store, "t1")
    before = await store.snapshot("t1")
    assert [await store.compact("t1", 7, batch=3) for _ in range(4)] == [3, 3, 1, 0]
    assert await store.snapshot("t1") == before
    for after in range(6):
        got = await store.read_events("t1", after)
        assert got is not None and got.from_snapshot and got.events == []
    got = await store.read_events("t1", 7)
    assert got is not None and not got.from_snapshot and [e.seq for e in got.events] == [8, 9, 10]
    assert await store.compact("t1", 100) == 3  # past the end: everything, the snapshot stays
    got = await store.read_events("t1", 10)
    assert got is not None and not got.from_snapshot and got.events == []
    last = await store.append("t1", [chunk("a", "z")])
    assert [e.seq for e in last.events] == [11]
    assert await store.get("t1") == sequential([*log, *last.events])


async def test_wait_returns_at_once_when_events_are_there(store: EventLogStore) -> None:
    await store.create(make_task("t1"))
    assert await store.wait_events("t1", 0, timeout=60)


async def test_wait_times_out_without_events(store: EventLogStore) -> None:
    await store.create(make_task("t1"))
    # A wake is a hint: the create's own notification may arrive once the wait has begun (on a
    # busy machine with PostgreSQL). Such a wake finds nothing new, and the next wait times out.
    wakes = 0
    while await store.wait_events("t1", 1, timeout=0.01):
        wakes += 1
        assert wakes == 1, "woken again without a commit"
        got = await store.read_events("t1", 1)
        assert got is not None and got.events == []


async def test_wait_wakes_on_append_and_on_delete(store: EventLogStore) -> None:
    await store.create(make_task("t1"))
    waiter = asyncio.ensure_future(store.wait_events("t1", 1, timeout=60))
    await asyncio.sleep(0)
    assert not waiter.done()
    await store.append("t1", [chunk("a", "x")])
    assert await asyncio.wait_for(waiter, 60)
    waiter = asyncio.ensure_future(store.wait_events("t1", 2, timeout=60))
    await asyncio.sleep(0)
    await store.delete_task("t1")
    assert await asyncio.wait_for(waiter, 60)
    assert await store.read_events("t1", 2) is None


# -- listing -------------------------------------------------------------------------------


async def test_list_orders_by_status_time_and_filters(store: EventLogStore) -> None:
    await store.create(make_task("t1", at=1), owner="o")
    await store.create(make_task("t2", at=2, context="c2"), owner="o")
    await store.create(make_task("t3", S.INPUT_REQUIRED, at=3), owner="o")
    await store.append("t1", [status(S.WORKING, at=5)])
    await store.append("t2", [chunk("a", "x")])  # an artifact does not move a task
    ids = [t.id for t in (await store.list(TaskQuery(), owner="o")).tasks]
    assert ids == ["t1", "t3", "t2"]
    first = await store.list(TaskQuery(page_size=2), owner="o")
    assert [t.id for t in first.tasks] == ["t1", "t3"] and first.total_size == 3
    second = await store.list(TaskQuery(page_size=2, page_token=first.next_page_token), owner="o")
    assert [t.id for t in second.tasks] == ["t2"] and second.next_page_token == ""
    assert second.tasks[0].artifacts[0].parts == [Part(text="x")]  # the tail is folded in
    by_state = await store.list(TaskQuery(state=S.INPUT_REQUIRED), owner="o")
    assert [t.id for t in by_state.tasks] == ["t3"]
    by_context = await store.list(TaskQuery(context_id="c2"), owner="o")
    assert [t.id for t in by_context.tasks] == ["t2"]
    since = await store.list(TaskQuery(status_after=ts(3)), owner="o")
    assert [t.id for t in since.tasks] == ["t1", "t3"]


# -- push configs and outbox ---------------------------------------------------------------


async def test_outbox_rows_are_written_with_their_events(store: EventLogStore) -> None:
    created = await store.create(make_task("t1"), push_configs=[config("p", "t1")], push=True)
    assert created.outbox == 1
    silent = await store.append("t1", [chunk("a", "quiet")])
    assert silent.outbox == 0
    done = await store.append("t1", [status(S.WORKING), user("q"), chunk("a", "x")], push=True)
    assert done.outbox == 2  # the history message is not pushed
    lanes, _ = await store.pending_lanes(0)
    assert lanes == [("t1", "p")]
    bodies = []
    while (delivery := await store.next_delivery("t1", "p")) is not None:
        bodies.append(delivery.body)
        await store.delivery_done(delivery.seq)
    streamed = [e.body for e in done.events if e.streamed]
    assert bodies == [created.events[0].body, *streamed]


async def test_push_configs_put_later_get_rows_too(store: EventLogStore) -> None:
    await store.create(make_task("t1"))
    await store.put_push_config(config("p", "t1"))
    assert (await store.append("t1", [chunk("a", "x")], push=True)).outbox == 1


# -- recovery and reopening ----------------------------------------------------------------


async def test_open_fails_interrupted_work_through_the_log(backend: Backend) -> None:
    store = await backend.open()
    await store.create(make_task("run", S.WORKING), push_configs=[config("p", "run")])
    await store.create(make_task("new", S.SUBMITTED))
    await store.create(make_task("ask", S.INPUT_REQUIRED))
    await store.append("run", [chunk("a", "x")])
    store, failed = await backend.reopen(store)
    assert sorted(failed) == ["new", "run"]
    log = await whole_log(store, "run")
    assert [e.seq for e in log] == [1, 2, 3] and log[-1].kind is EventKind.STATUS
    got = await store.get("run")
    assert got is not None and got.status is not None and got.status.state == S.FAILED
    assert got.status.message is not None
    assert got.status.message.parts[0].text == backend.restart_message
    assert got == sequential(log)
    delivery = await store.next_delivery("run", "p")
    assert delivery is not None and delivery.body == log[-1].body
    ask = await store.get("ask")
    assert ask is not None and ask.status is not None and ask.status.state == S.INPUT_REQUIRED
    store, failed = await backend.reopen(store)
    assert failed == []
    assert [e.seq for e in (await store.append("ask", [status(S.WORKING)])).events] == [2]


async def test_concurrent_appends_to_many_tasks_stay_gapless(store: EventLogStore) -> None:
    ids = [f"t{i}" for i in range(8)]
    for task_id in ids:
        await store.create(make_task(task_id))

    async def agent(task_id: str) -> None:
        for i in range(25):
            await store.append(task_id, [chunk("a", str(i))])
            if i % 10 == 0:
                await store.append(task_id, [status(S.WORKING, str(i))])

    await asyncio.gather(*(agent(task_id) for task_id in ids))
    for task_id in ids:
        log = await whole_log(store, task_id)
        assert [e.seq for e in log] == list(range(1, len(log) + 1)) and len(log) == 29
        assert await store.get(task_id) == sequential(log)


async def test_appends_started_together_are_checked_in_order(store: EventLogStore) -> None:
    await store.create(make_task("t1"))
    results = await asyncio.gather(
        store.append("t1", [chunk("a", "x")]),
        store.append("t1", [status(S.COMPLETED)]),
        store.append("t1", [chunk("a", "late")]),
        return_exceptions=True,
    )
    assert isinstance(results[2], InvalidTransitionError)
    log = await whole_log(store, "t1")
    assert [e.seq for e in log] == [1, 2, 3]
    assert await store.get("t1") == sequential(log)


# -- retention -----------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_expired_names_tasks_by_state_and_change_time(
    backend_kind: str, tmp_path: Path
) -> None:
    clock = Clock()
    backend = Backend(backend_kind, tmp_path, clock=clock)
    try:
        store = await backend.open()
        await store.create(make_task("done"))
        await store.create(make_task("ask"))
        await store.create(make_task("busy"))
        clock.now = 1010
        await store.append("done", [status(S.COMPLETED)])
        clock.now = 1020
        await store.append("ask", [status(S.INPUT_REQUIRED)])
        await store.append("busy", [chunk("a", "x")])  # no state change: time stays
        terminal = {S.COMPLETED, S.FAILED}
        assert await store.expired(terminal, 1010, limit=10) == []
        assert await store.expired(terminal, 1011, limit=10) == ["done"]
        waiting = {S.INPUT_REQUIRED, S.WORKING}
        assert await store.expired(waiting, 2000, limit=10) == ["busy", "ask"]
        assert await store.expired(waiting, 2000, limit=1) == ["busy"]
        assert await store.expired(set(), 2000, limit=10) == []
        assert await store.expired(terminal, 2000, limit=10, logged=True) == ["done"]
        while await store.compact("done", 100):
            pass
        assert await store.expired(terminal, 2000, limit=10, logged=True) == []
        assert await store.expired(terminal, 2000, limit=10) == ["done"]
    finally:
        await backend.close_all()


async def test_delete_takes_events_configs_and_outbox_rows(store: EventLogStore) -> None:
    await store.create(make_task("t1"), push_configs=[config("p", "t1")], push=True)
    for i in range(7):
        await store.append("t1", [chunk("a", str(i))], push=True)
    await store.create(make_task("t2"), push_configs=[config("p", "t2")], push=True)
    assert await store.delete_task("t1")
    assert not await store.delete_task("t1")
    assert await store.get("t1") is None and await store.snapshot("t1") is None
    assert await store.read_events("t1", 0) is None
    with pytest.raises(TaskNotFoundError):
        await store.append("t1", [chunk("a", "x")])
    assert await store.list_push_configs("t1") == []
    assert await store.next_delivery("t1", "p") is None
    assert await store.compact("t1", 5) == 0
    purged = []
    while count := await store.purge(batch=4):
        assert count <= 5  # at most a batch, plus the task's own marker
        purged.append(count)
    assert sum(purged) in (0, 8 + 8 + 1)  # memory frees at once; SQLite: events, rows, marker
    lanes, _ = await store.pending_lanes(0)
    assert lanes == [("t2", "p")]
    assert await store.get("t2") is not None


# -- backend specifics ---------------------------------------------------------------------


async def test_sqlite_file_is_held_by_one_store(tmp_path: Path) -> None:
    first = SQLiteTaskStore(tmp_path / "x.sqlite3")
    await first.open()
    try:
        with pytest.raises(RuntimeError, match="in use"):
            await SQLiteTaskStore(tmp_path / "x.sqlite3").open()
    finally:
        await first.close()


# -- the fold ------------------------------------------------------------------------------

NAMES = st.sampled_from(["", "n1", "n2"])


@st.composite
def artifact_events(draw: st.DrawFn) -> TaskArtifactUpdateEvent:
    artifact = Artifact(
        artifact_id=draw(st.sampled_from(["a", "b", "c"])),
        name=draw(NAMES),
        description=draw(NAMES),
        parts=[Part(text=draw(st.text(max_size=3)))],
        metadata=draw(st.none() | st.fixed_dictionaries({"k": st.integers(0, 3)})),
        extensions=draw(st.lists(st.sampled_from(["x", "y", "z"]), max_size=3)),
    )
    return TaskArtifactUpdateEvent(
        artifact=artifact, append=draw(st.booleans()), last_chunk=draw(st.booleans())
    )


def status_events() -> st.SearchStrategy[TaskStatusUpdateEvent]:
    states = st.sampled_from(
        [S.WORKING] * 4 + [S.INPUT_REQUIRED, S.AUTH_REQUIRED, S.COMPLETED, S.FAILED, S.SUBMITTED]
    )
    return st.builds(status, states, st.sampled_from(["", "note"]))


def log_inputs() -> st.SearchStrategy[LogInput]:
    messages = st.builds(user, st.sampled_from(["p", "q"]))
    return st.one_of(artifact_events(), artifact_events(), status_events(), messages)


def encoded(seq: int, item: Task | LogInput) -> LogEvent:
    """An event logged as the stores log it (see _events.prepare), for the pure fold test."""
    if isinstance(item, Task):
        return LogEvent(seq, EventKind.TASK, codec.dumps({"task": item.to_dict()}))
    prepared = _events.prepare("t1", "c1", S.WORKING, [item], EPOCH)
    kind, body = prepared.frames[0]
    return LogEvent(seq, kind, body)


@settings(max_examples=200)
@given(st.lists(st.tuples(artifact_events(), st.booleans()), max_size=30), st.integers(0, 5))
def test_fold_equals_applying_each_event(
    chunks: list[tuple[TaskArtifactUpdateEvent, bool]], cut: int
) -> None:
    """Grouped, combined artifact folding gives exactly the sequential result, from any base."""
    task = make_task("t1")
    items: list[LogInput] = []
    for event, with_status in chunks:
        items.append(event)
        if with_status:
            items.append(status(S.WORKING, "n"))
    log = [encoded(1, task), *(encoded(i + 2, item) for i, item in enumerate(items))]
    base = sequential(log[: cut + 1]) if cut < len(log) else sequential(log)
    folded = fold(copy.deepcopy(base), log[cut + 1 :], None)
    assert folded == sequential(log)


# -- the state machine ---------------------------------------------------------------------

TASK_IDS = st.sampled_from(["t0", "t1", "t2"])


class LogMachine(RuleBasedStateMachine):
    """Random work on one store against a model that keeps every committed event."""

    def __init__(self, kind: str, directory: Path) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.backend = Backend(kind, directory, history_limit=6)
        self.store = self.run(self.backend.open())
        self.logs: dict[str, list[LogEvent]] = {}
        self.first: dict[str, int] = {}  # the lowest number still logged

    def run(self, coroutine: Any) -> Any:
        return self.loop.run_until_complete(coroutine)

    def teardown(self) -> None:
        self.run(self.backend.close_all())
        self.loop.close()

    def model(self, task_id: str) -> Task:
        return sequential(self.logs[task_id], history_limit=6)

    @rule(
        task_id=TASK_IDS,
        state=st.sampled_from([S.SUBMITTED, S.WORKING, S.INPUT_REQUIRED]),
        events=st.lists(log_inputs(), max_size=3),
    )
    def create(self, task_id: str, state: TaskState, events: list[LogInput]) -> None:
        trial = make_task(task_id, state)
        try:
            for event in events:
                apply(trial, event, now=EPOCH)
        except InvalidTransitionError:  # refused before anything is stored or looked up
            with pytest.raises(InvalidTransitionError):
                self.run(self.store.create(make_task(task_id, state), events=events))
            return
        if task_id in self.logs:
            with pytest.raises(ValueError):
                self.run(self.store.create(make_task(task_id, state), events=events))
            return
        done = self.run(self.store.create(make_task(task_id, state), events=events))
        assert [e.seq for e in done.events] == list(range(1, 2 + len(events)))
        self.logs[task_id], self.first[task_id] = list(done.events), 1
        if done.task is not None:  # a settling first turn: the fold handed over is the stored one
            assert done.task == self.model(task_id)

    @rule(task_id=TASK_IDS, events=st.lists(log_inputs(), min_size=1, max_size=4))
    def append(self, task_id: str, events: list[LogInput]) -> None:
        if task_id not in self.logs:
            with pytest.raises(TaskNotFoundError):
                self.run(self.store.append(task_id, events))
            return
        trial = self.model(task_id)
        try:
            for event in events:
                apply(trial, event, now=EPOCH)
        except InvalidTransitionError:
            with pytest.raises(InvalidTransitionError):
                self.run(self.store.append(task_id, events))
            return
        done = self.run(self.store.append(task_id, events))
        head = self.logs[task_id][-1].seq
        assert [e.seq for e in done.events] == list(range(head + 1, head + 1 + len(events)))
        for event, logged in zip(events, done.events, strict=True):
            frame = codec.decode(StreamResponse, logged.body)
            if isinstance(event, TaskArtifactUpdateEvent):
                assert frame.artifact_update is not None
                assert frame.artifact_update.artifact == event.artifact
                assert frame.artifact_update.append == event.append
        self.logs[task_id] += done.events
        if is_settled(done.state):  # a settled task's log is folded in the same call...
            assert done.task is not None
        if done.task is not None:  # ...and the folded task handed over is the stored fold
            assert done.task == self.model(task_id)
            done.task.history.append(user("not stored"))  # the caller owns it
            assert self.run(self.store.get(task_id)) == self.model(task_id)

    @rule(task_id=TASK_IDS, data=st.data())
    def read_after(self, task_id: str, data: st.DataObject) -> None:
        log = self.logs.get(task_id)
        head = log[-1].seq if log else 0
        after = data.draw(st.integers(0, head + 1))
        limit = data.draw(st.sampled_from([1, 3, 1000]))
        got = self.run(self.store.read_events(task_id, after, limit=limit))
        if log is None:
            assert got is None
        elif after + 1 < self.first[task_id] or after > head:
            assert got is not None and got.from_snapshot and got.events == []
        else:
            assert got is not None and not got.from_snapshot
            assert got.events == log[after : after + limit]

    @rule(task_id=TASK_IDS, data=st.data())
    def compact(self, task_id: str, data: st.DataObject) -> None:
        if task_id not in self.logs:
            assert self.run(self.store.compact(task_id, 5)) == 0
            return
        head = self.logs[task_id][-1].seq
        through = data.draw(st.integers(0, head + 1))
        batch = data.draw(st.integers(1, 4))
        dropped = self.run(self.store.compact(task_id, through, batch=batch))
        expected = max(0, min(batch, min(through, head) - self.first[task_id] + 1))
        assert dropped == expected
        self.first[task_id] += dropped

    @rule(task_id=TASK_IDS)
    def delete(self, task_id: str) -> None:
        assert self.run(self.store.delete_task(task_id)) == (task_id in self.logs)
        self.logs.pop(task_id, None)
        self.first.pop(task_id, None)
        while self.run(self.store.purge(batch=3)):
            pass

    @rule()
    def reopen(self) -> None:
        self.store, failed = self.run(self.backend.reopen(self.store))
        interrupted = {S.SUBMITTED, S.WORKING}
        expected = [t for t in self.logs if _state(self.model(t)) in interrupted]
        assert sorted(failed) == sorted(expected)
        for task_id in failed:
            got = self.run(self.store.read_events(task_id, self.logs[task_id][-1].seq))
            assert got is not None and [e.kind for e in got.events] == [EventKind.STATUS]
            self.logs[task_id] += got.events
            state = self.model(task_id).status
            assert state is not None and state.state == S.FAILED

    @invariant()
    def snapshots_are_the_fold_of_the_log(self) -> None:
        for task_id, log in self.logs.items():
            snapshot = self.run(self.store.snapshot(task_id))
            assert snapshot is not None and snapshot.seq == log[-1].seq
            assert snapshot.task == self.model(task_id)
            assert self.run(self.store.get(task_id)) == snapshot.task
        page = self.run(self.store.list(TaskQuery(page_size=10)))
        assert sorted(page.tasks, key=lambda t: t.id) == [self.model(t) for t in sorted(self.logs)]


@pytest.mark.parametrize("backend_kind", MACHINE_BACKENDS, indirect=True)
def test_state_machine(backend_kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Random steps; a small fold threshold makes folds on size happen between reads too."""
    monkeypatch.setattr(_events, "FOLD_MIN_BYTES", 300)
    run_state_machine_as_test(
        lambda: LogMachine(backend_kind, Path(tempfile.mkdtemp(dir=tmp_path))),
        settings=settings(max_examples=40, stateful_step_count=30, deadline=None),
    )


def _state(task: Task) -> TaskState:
    assert task.status is not None
    return task.status.state
