"""Unit tests of the per-task hub and the streams' log cursors (a2a_wire.server._hub,
_subscriber): bounded memory per stream, numbering and order, snapshots, and refused events."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from a2a_wire import codec
from a2a_wire.errors import InvalidParamsError, ProtocolError, TaskNotFoundError
from a2a_wire.server._hub import TaskHub
from a2a_wire.server._run import Run
from a2a_wire.server._subscriber import END, KEEPALIVE, Frame, Item, Subscriber
from a2a_wire.server.store import EventKind, InMemoryTaskStore, LogEvent
from a2a_wire.types import (
    Artifact,
    Message,
    Part,
    Role,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)


def status(state: TaskState) -> TaskStatusUpdateEvent:
    return TaskStatusUpdateEvent(status=TaskStatus(state=state))


def chunk(artifact_id: str, text: str, append: bool = False) -> TaskArtifactUpdateEvent:
    artifact = Artifact(artifact_id=artifact_id, parts=[Part(text=text)])
    return TaskArtifactUpdateEvent(artifact=artifact, append=append)


def user_message() -> Message:
    return Message(message_id="m1", role=Role.USER, parts=[Part(text="hi")])


@pytest.fixture
async def store() -> InMemoryTaskStore:
    store = InMemoryTaskStore()
    await store.open()
    return store


def new_hub(store: InMemoryTaskStore, queue_size: int = 10) -> tuple[TaskHub, Run]:
    hub = TaskHub("t1", None, "", store, queue_size)
    return hub, Run(hub, user_message(), "c1", "")


async def drain(sub: Subscriber) -> list[Item]:
    """What the stream hands out now: up to its end, or until nothing more is at hand."""
    items: list[Item] = []
    while True:
        item = await sub.next(0.05)
        if item is KEEPALIVE:
            return items
        items.append(item)
        if item is END or isinstance(item, ProtocolError):
            return items


def frames(items: list[Item]) -> list[tuple[int | None, dict[str, Any]]]:
    return [(f.seq, codec.loads(f.body)) for f in items if isinstance(f, Frame)]


def log_event(seq: int, text: str) -> LogEvent:
    artifact = {"artifactId": "a", "parts": [{"text": text}]}
    return LogEvent(
        seq, EventKind.ARTIFACT, codec.dumps({"artifactUpdate": {"artifact": artifact}})
    )


async def test_a_slow_reader_holds_at_most_the_limit_and_still_gets_every_event(
    store: InMemoryTaskStore,
) -> None:
    hub, run = new_hub(store, queue_size=3)
    sub = hub.open_stream().subscriber
    for i in range(12):  # the first makes the task (events 1 and 2), then one each
        assert await run.enqueue_event(chunk("a", str(i), append=i > 0))
        assert len(sub._cache) <= 3  # the rest stays in the store
    await run.enqueue_event(status(TaskState.COMPLETED))
    got = frames(await drain(sub))
    assert [seq for seq, _ in got] == list(range(1, 15))
    texts = [f["artifactUpdate"]["artifact"]["parts"][0]["text"] for _, f in got[1:-1]]
    assert texts == [str(i) for i in range(12)]


async def test_offers_only_save_reads(store: InMemoryTaskStore) -> None:
    """A subscriber takes what follows its position from offers, else from the store."""
    await store.create(Task(id="t1", context_id="c1", status=TaskStatus(state=TaskState.WORKING)))
    for i in range(4):
        await store.append("t1", [chunk("a", str(i), append=True)])
    sub = Subscriber(store, "t1", "", 10, after=2)
    sub.offer([log_event(9, "not logged"), log_event(10, "nor this")])  # ahead: not used yet
    got = frames(await drain(sub))
    assert [seq for seq, _ in got] == [3, 4, 5]  # from the store
    await store.append("t1", [chunk("a", "six", append=True)])
    sub.offer([log_event(6, "as offered")])  # follows the position: taken without a read
    [(seq, frame)] = frames(await drain(sub))
    assert seq == 6 and frame["artifactUpdate"]["artifact"]["parts"] == [{"text": "as offered"}]


async def test_a_resume_reads_past_history_messages_to_the_next_event(
    store: InMemoryTaskStore,
) -> None:
    await store.create(Task(id="t1", context_id="c1", status=TaskStatus(state=TaskState.WORKING)))
    for text in ("a", "b", "c"):  # events 2, 3, 4: history, not streamed
        note = Message(message_id=text, role=Role.AGENT, parts=[Part(text=text)])
        await store.append("t1", [note])
    await store.append("t1", [status(TaskState.COMPLETED)])
    sub = Subscriber(store, "t1", "", 2, after=1)  # reads two events at a time
    await sub.prime()
    assert [seq for seq, _ in frames(await drain(sub))] == [5]


async def test_subscriber_finish_and_keepalive(store: InMemoryTaskStore) -> None:
    await store.create(Task(id="t1", context_id="c1", status=TaskStatus(state=TaskState.WORKING)))
    sub = Subscriber(store, "t1", "", 3, after=1)
    assert await sub.next(0.01) is KEEPALIVE
    await store.append("t1", [chunk("a", "x")])
    sub.finish(InvalidParamsError())
    sub.finish()  # the first finish wins
    first = await sub.next(1)
    assert isinstance(first, Frame) and first.seq == 2
    assert isinstance(await sub.next(1), InvalidParamsError)
    other = Subscriber(store, "t1", "", 3, after=2)
    waiter = asyncio.create_task(other.next(5))
    await asyncio.sleep(0)
    other.finish()
    assert await waiter is END


async def test_a_deleted_task_ends_its_streams_with_not_found(store: InMemoryTaskStore) -> None:
    await store.create(Task(id="t1", context_id="c1", status=TaskStatus(state=TaskState.WORKING)))
    sub = Subscriber(store, "t1", "", 3, after=1)
    assert await sub.next(0.01) is KEEPALIVE
    assert await store.delete_task("t1")
    # No offer announces a deletion: the read after a silence (the keep-alive) finds it gone.
    item = await sub.next(0.01)
    assert isinstance(item, TaskNotFoundError) and await sub.next(1) is END


async def test_first_update_creates_and_stores_the_task(store: InMemoryTaskStore) -> None:
    hub, run = new_hub(store)
    sub = hub.open_stream().subscriber
    assert await run.enqueue_event(status(TaskState.WORKING))
    assert run.first.done() and not run.settled.done()
    stored = await store.get("t1")
    assert stored is not None and stored.status is not None
    assert stored.status.state == TaskState.WORKING
    got = frames(await drain(sub))
    assert [(seq, next(iter(f))) for seq, f in got] == [(1, "task"), (2, "statusUpdate")]
    assert got[0][1]["task"]["status"]["state"] == "TASK_STATE_SUBMITTED"


async def test_events_after_terminal_are_refused_and_logged(
    store: InMemoryTaskStore, caplog: pytest.LogCaptureFixture
) -> None:
    hub, run = new_hub(store)
    await run.enqueue_event(status(TaskState.WORKING))
    await run.enqueue_event(status(TaskState.COMPLETED))
    assert run.settled.done()
    before = await store.get("t1")
    with caplog.at_level(logging.WARNING, "a2a_wire.server"):
        assert not await run.enqueue_event(status(TaskState.WORKING))
        assert not await run.enqueue_event(chunk("a", "x"))
    assert "refused" in caplog.text
    assert await store.get("t1") == before


async def test_refused_events_leave_the_task_unchanged(store: InMemoryTaskStore) -> None:
    hub, run = new_hub(store)
    await run.enqueue_event(status(TaskState.WORKING))
    assert not await run.enqueue_event(chunk("", "x", append=True))  # no artifactId
    assert not await run.enqueue_event(Task(id="t1", status=TaskStatus(state=TaskState.WORKING)))
    assert not await run.enqueue_event(status(TaskState.SUBMITTED))
    other = TaskStatusUpdateEvent(task_id="other", status=TaskStatus(state=TaskState.COMPLETED))
    assert not await run.enqueue_event(other)
    stored = await store.get("t1")
    assert stored is not None and stored.status is not None
    assert stored.status.state == TaskState.WORKING and stored.artifacts == []


async def test_first_task_must_use_the_ids_of_the_request(store: InMemoryTaskStore) -> None:
    hub, run = new_hub(store)
    assert not await run.enqueue_event(Task(id="mine", status=TaskStatus(state=TaskState.WORKING)))
    assert not await run.enqueue_event(Task(status=TaskStatus(state=TaskState.UNSPECIFIED)))
    assert hub.state is None and await store.get("t1") is None
    assert await run.enqueue_event(Task(status=TaskStatus(state=TaskState.WORKING)))
    task = await hub.task()
    assert hub.state == TaskState.WORKING and (task.id, task.context_id) == ("t1", "c1")
    assert task.history[0].message_id == "m1"


async def test_message_reply_closes_the_run(store: InMemoryTaskStore) -> None:
    hub, run = new_hub(store)
    sub = hub.open_stream().subscriber
    reply = Message(message_id="r", role=Role.AGENT, parts=[Part(text="yo")], task_id="t1")
    assert await run.enqueue_event(reply)
    assert run.reply is not None and run.reply.task_id == "" and run.reply.context_id == "c1"
    assert not await run.enqueue_event(status(TaskState.WORKING))
    items = await drain(sub)
    assert [(f.seq, codec.loads(f.body)["message"]["messageId"]) for f in items[:-1]] == [
        (None, "r")
    ]
    assert items[-1] is END
    assert await store.get("t1") is None


async def test_late_subscriber_sees_snapshot_then_each_event_once(store: InMemoryTaskStore) -> None:
    hub, run = new_hub(store)
    early = hub.open_stream().subscriber
    await run.enqueue_event(status(TaskState.WORKING))
    await run.enqueue_event(chunk("a", "one"))
    async with hub.lock:
        snapshot = await store.snapshot("t1")
        assert snapshot is not None and snapshot.seq == 3
        late = hub.open_stream(history_length=0, snapshot=snapshot).subscriber
    await run.enqueue_event(chunk("a", "two", append=True))
    await run.enqueue_event(status(TaskState.COMPLETED))
    early_frames = frames(await drain(early))
    late_frames = frames(await drain(late))
    assert late_frames[0][0] == 3
    assert late_frames[0][1]["task"]["artifacts"][0]["parts"] == [{"text": "one"}]
    assert "history" not in late_frames[0][1]["task"]
    assert late_frames[1:] == early_frames[-2:]
    assert [seq for seq, _ in early_frames] == [1, 2, 3, 4, 5]
    assert not hub.subscribers


def idle_hub(store: InMemoryTaskStore, idle: list[TaskHub]) -> TaskHub:
    return TaskHub("t1", None, "", store, 10, on_idle=idle.append)


async def test_a_hub_is_idle_once_the_last_hold_ends(store: InMemoryTaskStore) -> None:
    idle: list[TaskHub] = []
    hub = idle_hub(store, idle)
    with hub.hold():
        with hub.hold():
            pass
        assert idle == []
    assert idle == [hub]


async def test_a_running_agent_keeps_the_hub_in_use(store: InMemoryTaskStore) -> None:
    idle: list[TaskHub] = []
    hub = idle_hub(store, idle)
    run = Run(hub, user_message(), "c1", "")
    gate = asyncio.Event()

    async def execute() -> None:
        await gate.wait()

    task = asyncio.create_task(execute())
    with hub.hold():
        hub.start_run(run, task)
    assert idle == [] and hub.run_task is task
    gate.set()
    await task
    hub.end_run(run, task)
    assert idle == [hub] and hub.run_task is None
    assert run.closed and run.settled.done()


async def test_a_stream_holds_the_hub_until_it_is_closed(store: InMemoryTaskStore) -> None:
    idle: list[TaskHub] = []
    hub = idle_hub(store, idle)
    with hub.hold():
        subscription = hub.open_stream()
    assert idle == [] and hub.subscribers == (subscription.subscriber,)
    subscription.close()
    subscription.close()  # idempotent
    assert idle == [hub] and not hub.subscribers and subscription.subscriber.closed


async def test_while_cancelling_the_end_of_the_run_waits_for_the_cancel(
    store: InMemoryTaskStore,
) -> None:
    hub = TaskHub("t1", None, "", store, 10)
    run = Run(hub, user_message(), "c1", "")
    task = asyncio.create_task(asyncio.sleep(0))
    hub.start_run(run, task)
    with hub.cancelling():
        await task
        hub.end_run(run, task)
        assert run.closed and not run.settled.done()
    assert run.settled.done()


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_first_update_is_stored_with_its_task_in_one_create(
    kind: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A first status or artifact update goes into the create (one write), never an append;
    one the new task refuses leaves it created alone, SUBMITTED, the update logged as refused."""
    from a2a_wire.server.store import SQLiteTaskStore

    backing = InMemoryTaskStore() if kind == "memory" else SQLiteTaskStore(tmp_path / "t.db")
    await backing.open()
    appends: list[str] = []
    real_append = backing.append

    async def counted(task_id: str, *args: Any, **kwargs: Any) -> Any:
        appends.append(task_id)
        return await real_append(task_id, *args, **kwargs)

    monkeypatch.setattr(backing, "append", counted)
    try:
        hub = TaskHub("t1", None, "", backing, 10)
        run = Run(hub, user_message(), "c1", "")
        assert await run.enqueue_event(chunk("a", "x"))
        assert appends == [] and run.first.done() and hub.state == TaskState.SUBMITTED
        log = await backing.read_events("t1", 0)
        assert log is not None and [e.kind for e in log.events] == [
            EventKind.TASK,
            EventKind.ARTIFACT,
        ]
        hub2 = TaskHub("t2", None, "", backing, 10)
        run2 = Run(hub2, user_message(), "c1", "")
        with caplog.at_level(logging.WARNING, "a2a_wire.server"):
            assert not await run2.enqueue_event(chunk("", "x", append=True))  # no artifactId
        assert "refused" in caplog.text and run2.first.done()
        stored = await backing.get("t2")
        assert stored is not None and stored.status is not None and stored.artifacts == []
        assert stored.status.state == TaskState.SUBMITTED and hub2.state == TaskState.SUBMITTED
        assert await run2.enqueue_event(status(TaskState.COMPLETED))
        assert appends == ["t2"] and run2.settled.done()
    finally:
        await backing.close()
