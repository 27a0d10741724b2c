"""A Hypothesis state machine over the hub, its streams and the store, on every backend.

Random agent events go through :meth:`TaskHub.publish`; streams open from the task (a
snapshot) or resume from the last number they saw (``Last-Event-ID``), read some, disconnect,
and the store is closed and reopened (a restart: SQLite reads the file again and recovery
fails the running task; the streams of the old process are gone and resume on the new one).
After every step: each stream has seen exactly the streamed events of the log after its start,
in order, without a gap or a duplicate, and ended only after one that settles the task; and the
task's snapshot equals the plain sequential fold of its whole log.
"""

from __future__ import annotations

import asyncio
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from store_support import MACHINE_BACKENDS, Backend

from a2a_wire import codec
from a2a_wire._protocol.states import is_settled, is_terminal
from a2a_wire._protocol.tasks import apply
from a2a_wire.server._hub import TaskHub
from a2a_wire.server._run import Run
from a2a_wire.server._subscriber import END, KEEPALIVE, Frame, Subscription
from a2a_wire.server.store import EventLogStore, LogEvent, trim_history
from a2a_wire.server.store._fold import events as _events
from a2a_wire.types import (
    Artifact,
    Message,
    Part,
    Role,
    StreamResponse,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
    Timestamp,
)

S = TaskState
HISTORY = 5
EPOCH = Timestamp()


def user(text: str) -> Message:
    return Message(message_id=f"u-{text}", role=Role.USER, parts=[Part(text=text)])


def agent_events() -> st.SearchStrategy[Any]:
    states = st.sampled_from([S.WORKING] * 10 + [S.INPUT_REQUIRED, S.COMPLETED, S.SUBMITTED])
    statuses = st.builds(lambda s: TaskStatusUpdateEvent(status=TaskStatus(state=s)), states)
    chunks = st.builds(
        lambda a, text, append: TaskArtifactUpdateEvent(
            artifact=Artifact(artifact_id=a, parts=[Part(text=text)]), append=append
        ),
        st.sampled_from(["a", "b"]),
        st.text("xyz", max_size=3),
        st.booleans(),
    )
    notes = st.builds(
        lambda t: Message(message_id=f"n-{t}", role=Role.AGENT, parts=[Part(text=t)]),
        st.sampled_from(["n1", "n2"]),
    )
    return st.one_of(statuses, chunks, chunks, chunks, notes)


def sequential(events: list[LogEvent]) -> Task:
    """The reference fold: event 1's task, then every later event applied in turn."""
    frames = [codec.decode(StreamResponse, event.body) for event in events]
    assert frames[0].task is not None
    task = frames[0].task
    for frame in frames[1:]:
        item = frame.status_update or frame.artifact_update or frame.message
        assert item is not None
        apply(task, item, now=EPOCH)
        trim_history(task, HISTORY)
    return task


def settles(body: bytes) -> bool:
    frame = codec.decode(StreamResponse, body)
    status = frame.status_update.status if frame.status_update is not None else None
    return status is not None and is_settled(status.state)


@dataclass
class Stream:
    """One open stream and what it has seen."""

    subscription: Subscription
    start: int
    seen: list[int] = field(default_factory=list)
    ended: bool = False

    @property
    def last(self) -> int:
        return self.seen[-1] if self.seen else self.start


class HubMachine(RuleBasedStateMachine):
    """Random work on one task's hub, streams and store; see the module docstring."""

    def __init__(self, kind: str, directory: Path) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.backend = Backend(kind, directory, history_limit=HISTORY)
        self.store: EventLogStore = self.run(self.backend.open())
        self.task_id = "t1"
        self.hub, self.agent = self.run(self.new_hub(None))
        self.open: list[Stream] = []

    def run(self, coroutine: Any) -> Any:
        return self.loop.run_until_complete(coroutine)

    def teardown(self) -> None:
        for stream in self.open:
            stream.subscription.close()
        self.run(self.backend.close_all())
        self.loop.close()

    def log(self) -> list[LogEvent]:
        events: list[LogEvent] = []
        while True:
            after = events[-1].seq if events else 0
            got = self.run(self.store.read_events(self.task_id, after, owner="o"))
            if got is None:
                return []
            assert not got.from_snapshot
            if not got.events:
                return events
            events += got.events

    async def new_hub(self, state: TaskState | None) -> tuple[TaskHub, Run]:
        """The task's hub and an agent run sending to it (a Run needs a running loop)."""
        hub = TaskHub(self.task_id, state, "o", self.store, queue_size=2)
        return hub, Run(hub, user("start"), "c1", "o")

    def pick(self, index: int) -> Stream:
        return self.open[index % len(self.open)]

    @rule(events=st.lists(agent_events(), min_size=1, max_size=4))
    def agent_sends(self, events: list[Any]) -> None:
        for event in events:
            if isinstance(event, Message) and self.hub.state is None:
                continue  # a direct reply instead of a task: not this machine's subject
            self.run(self.hub.publish(event, self.agent))

    @precondition(lambda self: self.hub.state is not None and len(self.open) < 3)
    @rule()
    def subscribe(self) -> None:
        async def opened() -> Stream:
            async with self.hub.lock:
                snapshot = await self.store.snapshot(self.task_id, owner="o")
                assert snapshot is not None
                stream = Stream(self.hub.open_stream(snapshot=snapshot), snapshot.seq)
            first = await stream.subscription.subscriber.next(1.0)
            assert isinstance(first, Frame) and first.seq == snapshot.seq  # the task first
            return stream

        self.open.append(self.run(opened()))

    @precondition(lambda self: self.open)
    @rule(most=st.integers(1, 8))
    def read(self, most: int) -> None:
        """Every open stream reads up to ``most`` of the items at hand."""

        async def drain(stream: Stream) -> None:
            sub = stream.subscription.subscriber
            for _ in range(most):
                if stream.ended or (item := await sub.next(0.001)) is KEEPALIVE:
                    return
                if item is END:
                    stream.ended = True
                else:
                    assert isinstance(item, Frame) and item.seq is not None, item
                    stream.seen.append(item.seq)

        for stream in self.open:
            self.run(drain(stream))

    @precondition(lambda self: self.open)
    @rule(index=st.integers(0, 7))
    def drop_and_resume(self, index: int) -> None:
        """The connection drops; the client comes back with the last id it saw."""
        stream = self.pick(index)
        stream.subscription.close()
        self.open.remove(stream)
        self._resume(stream.last)

    def _resume(self, last: int) -> None:
        async def opened() -> Stream:
            async with self.hub.lock:
                subscription = self.hub.open_stream(after=last)
                await subscription.subscriber.prime()
            return Stream(subscription, last)

        self.open.append(self.run(opened()))

    @precondition(lambda self: self.hub.state is not None and is_terminal(self.hub.state))
    @rule()
    def next_task(self) -> None:
        """The task is over: its streams close, and the agent starts on a new one."""
        for stream in self.open:
            stream.subscription.close()
        self.open.clear()
        self.agent.close()
        self.task_id = f"t{int(self.task_id[1:]) + 1}"
        self.hub, self.agent = self.run(self.new_hub(None))

    @rule(now=st.integers(0, 7))
    def restart(self, now: int) -> None:
        """The process ends: its streams are gone; the store reopens (with recovery)."""
        if now:
            return  # restarts are rarer than the other steps: they end the running task
        lasts = [stream.last for stream in self.open]
        for stream in self.open:
            stream.subscription.close()
        self.open.clear()
        self.agent.close()
        self.store, _ = self.run(self.backend.reopen(self.store))
        snapshot = self.run(self.store.snapshot(self.task_id, owner="o"))
        state = snapshot.task.status.state if snapshot and snapshot.task.status else None
        self.hub, self.agent = self.run(self.new_hub(state))
        if snapshot is not None:
            for last in lasts:
                self._resume(last)

    @invariant()
    def streams_see_the_log_exactly(self) -> None:
        log = self.log()
        for stream in self.open:
            expected = [e.seq for e in log if e.seq > stream.start and e.streamed]
            assert stream.seen == expected[: len(stream.seen)], (stream.start, stream.seen)
            assert not any(settles_seq(log, seq) for seq in stream.seen[:-1])
            if stream.ended and stream.seen:
                assert settles_seq(log, stream.seen[-1])
            elif stream.ended:  # a resume with nothing left: the task was finished
                assert expected == [] and is_terminal(sequential(log).status.state)

    @invariant()
    def the_snapshot_is_the_fold_of_the_log(self) -> None:
        log = self.log()
        if not log:
            return
        snapshot = self.run(self.store.snapshot(self.task_id, owner="o"))
        assert snapshot is not None and snapshot.seq == log[-1].seq
        assert snapshot.task == sequential(log)


def settles_seq(log: list[LogEvent], seq: int) -> bool:
    return any(e.seq == seq and settles(e.body) for e in log)


@pytest.mark.parametrize("kind", MACHINE_BACKENDS)
def test_hub_machine(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    """Random steps; a small fold threshold makes folds on size happen between reads too."""
    if kind == "postgresql":
        request.getfixturevalue("postgres_dsn")
    monkeypatch.setattr(_events, "FOLD_MIN_BYTES", 300)
    run_state_machine_as_test(
        lambda: HubMachine(kind, Path(tempfile.mkdtemp(dir=tmp_path))),
        settings=settings(max_examples=40, stateful_step_count=50, deadline=None),
    )
