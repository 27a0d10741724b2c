"""Unit tests of the per-task fan-out (a2a_wire.server._hub, _subscriber): bounded subscriber queues, ordering,
snapshots, and the events the hub refuses."""

from __future__ import annotations

import asyncio
import logging

import pytest

from a2a_wire import codec
from a2a_wire.errors import InternalError, InvalidParamsError
from a2a_wire.server._hub import TaskHub
from a2a_wire.server._run import Run
from a2a_wire.server._subscriber import END, KEEPALIVE, Subscriber
from a2a_wire.server.store import InMemoryTaskStore
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


def drain(sub: Subscriber) -> list[object]:
    items: list[object] = []
    while sub._items:
        items.append(sub._items.popleft())
    return items


async def test_subscriber_overflow_drops_backlog_for_one_error() -> None:
    sub = Subscriber(3)
    for i in range(3):
        sub.push(b"%d" % i)
    assert drain(sub) == [b"0", b"1", b"2"]
    for i in range(4):
        sub.push(b"%d" % i)
    items = drain(sub)
    assert len(items) == 1 and isinstance(items[0], InternalError)
    assert sub.closed
    sub.push(b"late")
    sub.finish()
    assert drain(sub) == []


async def test_subscriber_finish_and_keepalive() -> None:
    sub = Subscriber(3)
    assert await sub.next(0.01) is KEEPALIVE
    sub.push(b"a")
    sub.finish(InvalidParamsError())
    assert await sub.next(1) == b"a"
    assert isinstance(await sub.next(1), InvalidParamsError)
    other = Subscriber(3)
    waiter = asyncio.create_task(other.next(5))
    await asyncio.sleep(0)
    other.finish()
    assert await waiter is END


async def test_first_update_creates_and_stores_the_task(store: InMemoryTaskStore) -> None:
    hub, run = new_hub(store)
    sub = hub.subscribe()
    assert await run.enqueue_event(status(TaskState.WORKING))
    assert run.first.done() and not run.settled.done()
    stored = await store.get("t1")
    assert stored is not None and stored.status is not None
    assert stored.status.state == TaskState.WORKING
    frames = [codec.loads(f) for f in drain(sub) if isinstance(f, bytes)]
    assert [next(iter(f)) for f in frames] == ["task", "statusUpdate"]
    assert frames[0]["task"]["status"]["state"] == "TASK_STATE_SUBMITTED"


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
    assert hub.task is None
    assert await run.enqueue_event(Task(status=TaskStatus(state=TaskState.WORKING)))
    assert hub.task is not None and hub.task.id == "t1" and hub.task.context_id == "c1"
    assert hub.task.history[0].message_id == "m1"


async def test_message_reply_closes_the_run(store: InMemoryTaskStore) -> None:
    hub, run = new_hub(store)
    sub = hub.subscribe()
    reply = Message(message_id="r", role=Role.AGENT, parts=[Part(text="yo")], task_id="t1")
    assert await run.enqueue_event(reply)
    assert run.reply is not None and run.reply.task_id == "" and run.reply.context_id == "c1"
    assert not await run.enqueue_event(status(TaskState.WORKING))
    items = drain(sub)
    assert items[-1] is END
    assert await store.get("t1") is None


async def test_late_subscriber_sees_snapshot_then_each_event_once(store: InMemoryTaskStore) -> None:
    hub, run = new_hub(store)
    early = hub.subscribe()
    await run.enqueue_event(status(TaskState.WORKING))
    await run.enqueue_event(chunk("a", "one"))
    async with hub.lock:
        late = hub.subscribe(history_length=0)
    await run.enqueue_event(chunk("a", "two", append=True))
    await run.enqueue_event(status(TaskState.COMPLETED))
    early_frames = [codec.loads(f) for f in drain(early) if isinstance(f, bytes)]
    late_frames = [codec.loads(f) for f in drain(late) if isinstance(f, bytes)]
    assert late_frames[0]["task"]["artifacts"][0]["parts"] == [{"text": "one"}]
    assert "history" not in late_frames[0]["task"]
    assert late_frames[1:] == early_frames[-2:]
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
