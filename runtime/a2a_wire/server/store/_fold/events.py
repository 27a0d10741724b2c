"""The pure parts of the event log stores: checking events, folding them, waking readers.

All three backends check and fold with these functions, so that they fold alike; why the fold
groups artifact chunks and when a store folds: docs/internals/store.md, "The event log".
"""

from __future__ import annotations

import asyncio
import builtins
import copy
import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from a2a_wire import codec
from a2a_wire._protocol.states import is_settled
from a2a_wire._protocol.tasks import apply, now_timestamp
from a2a_wire.server.store._contract.log import FOLD_MIN_BYTES, EventKind, LogEvent, LogInput
from a2a_wire.server.store._contract.tasks import RESTART_MESSAGE
from a2a_wire.server.store._fold.history import trim_history
from a2a_wire.server.store._fold.keys import Instant, timestamp_key
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

__all__ = [
    "SHADOW_BYTES",
    "Applied",
    "Prepared",
    "Shadow",
    "Waiters",
    "fold",
    "fold_objects",
    "prepare",
    "remember",
    "restart_event",
    "should_fold",
    "status_instant",
    "task_frame",
]

_EPOCH = Timestamp()

H = TypeVar("H")


Applied = Task | TaskStatusUpdateEvent | TaskArtifactUpdateEvent | Message
"""What a logged event holds: the member of its StreamResponse that is set."""

SHADOW_BYTES = 8 * 1024
"""Largest snapshot (JSON bytes) of a new task that gets a :class:`Shadow`."""


@dataclass(frozen=True, slots=True)
class Prepared:
    """A checked batch, ready to be numbered and written.

    Attributes:
        frames: Each event's kind and StreamResponse JSON.
        status: The last new status, or ``None`` when the batch changes none.
        shadow: With a :class:`Shadow` given to :func:`prepare`, its task with the batch
            applied (a new object: the store takes it in when it reserves the batch,
            :meth:`Shadow.after`); else ``None``.
    """

    frames: builtins.list[tuple[EventKind, bytes]]
    status: TaskStatus | None
    shadow: Task | None = None


@dataclass(slots=True)
class Shadow:
    """A store's own decoded copy of a task's snapshot, kept current with each batch logged.

    With it, the fold that settles a task (``fold(decode(snapshot), decoded events)``) needs no
    decoding and no second pass over the events: :func:`prepare` checks each event by applying
    it to (a shallow copy of) the shadow's task, which then is the fold. A store keeps one from
    a task's creation until its first fold, which uses it up (the folded task goes to the
    caller, who owns it), and only while the snapshot is small. Everything in it is the store's
    alone: the task and each event are deep copies made before the caller could change the
    originals, and :func:`~a2a_wire._protocol.tasks.apply` never changes an object it was
    given, only the lists and fields of the task it updates.

    Attributes:
        task: Equal to the decoded snapshot with the events logged after it applied.
    """

    task: Task

    @classmethod
    def of(cls, task: Task, size: int) -> Shadow | None:
        """A shadow of a task just stored, ``size`` bytes of JSON (copied: it is the caller's).

        ``None`` past :data:`SHADOW_BYTES`: a large task is folded from its JSON.
        """
        return cls(task.__deepcopy__(None)) if size <= SHADOW_BYTES else None

    @staticmethod
    def after(shadow: Shadow | None, prepared: Prepared) -> Shadow | None:
        """A store's shadow once it reserves ``prepared``; ``None`` if not prepared on it.

        Call when the batch is reserved, before the first ``await`` of its write; without a
        shadow the store folds from JSON.
        """
        if shadow is None or prepared.shadow is None:
            return None
        shadow.task = prepared.shadow
        return shadow

    def fold(self, history_limit: int | None) -> Task:
        """The task with the events applied (the shadow is used up); the same one if asked again.

        A write that asked may run twice (:func:`~a2a_wire.server.store.sqlite._group.run_group`); trimming the
        history again changes nothing.
        """
        trim_history(self.task, history_limit)
        return self.task


def prepare(
    task_id: str,
    context_id: str,
    state: TaskState,
    events: Sequence[LogInput],
    now: Timestamp | None = None,
    shadow: Shadow | None = None,
) -> Prepared:
    """Check ``events`` in order against a task in ``state`` and encode them as logged.

    Args:
        task_id: The task's id.
        context_id: The task's context id.
        state: The task's state before the first event.
        events: The events.
        now: The timestamp of a status that carries none; by default the time now.
        shadow: The store's shadow of the task, if it keeps one: the events are checked on
            it, and :attr:`Prepared.shadow` is its task with them applied (the shadow itself
            is not changed).

    Raises:
        InvalidTransitionError: an event is illegal (nothing was changed).
        TypeError: an event is not a status, artifact or message.
    """
    now = now_timestamp() if now is None else now
    if shadow is not None:
        task = copy.copy(shadow.task)  # apply() replaces lists and fields, never changes them
    else:
        task = Task(id=task_id, context_id=context_id, status=TaskStatus(state=state))
    frames: builtins.list[tuple[EventKind, bytes]] = []
    status: TaskStatus | None = None
    for event in events:
        if not isinstance(event, TaskStatusUpdateEvent | TaskArtifactUpdateEvent | Message):
            raise TypeError(f"cannot log a {type(event).__name__}")
        if shadow is not None:
            event = event.__deepcopy__(None)  # the shadow keeps what it is given
        apply(task, event, now=now)
        if isinstance(event, TaskStatusUpdateEvent):
            status = task.status
            wire = TaskStatusUpdateEvent(
                task_id=task_id, context_id=context_id, status=status, metadata=event.metadata
            )
            frames.append((EventKind.STATUS, codec.dumps({"statusUpdate": wire.to_dict()})))
        elif isinstance(event, TaskArtifactUpdateEvent):
            chunk = TaskArtifactUpdateEvent(
                task_id=task_id,
                context_id=context_id,
                artifact=event.artifact,
                append=event.append,
                last_chunk=event.last_chunk,
                metadata=event.metadata,
            )
            frames.append((EventKind.ARTIFACT, codec.dumps({"artifactUpdate": chunk.to_dict()})))
        else:
            message = task.history[-1]
            frames.append((EventKind.MESSAGE, codec.dumps({"message": message.to_dict()})))
        if shadow is None:
            task.history, task.artifacts = [], []
    return Prepared(frames, status, task if shadow is not None else None)


def task_frame(body: bytes) -> bytes:
    """Event 1 of a log: the StreamResponse holding the task as created, from its JSON."""
    return b'{"task":' + body + b"}"


def restart_event(
    task_id: str, context_id: str, now: Timestamp, text: str = RESTART_MESSAGE
) -> TaskStatusUpdateEvent:
    """The FAILED status logged for a task whose executor died (recovery on open, takeover).

    Args:
        task_id: The task.
        context_id: Its context.
        now: The status timestamp.
        text: The agent message saying why.
    """
    note = Message(message_id=uuid.uuid4().hex, role=Role.AGENT, parts=[Part(text=text)])
    status = TaskStatus(state=TaskState.FAILED, message=note, timestamp=now)
    return TaskStatusUpdateEvent(task_id=task_id, context_id=context_id, status=status)


def status_instant(status: TaskStatus) -> Instant:
    """The listing key of a status: its timestamp, or the epoch when it has none."""
    return timestamp_key(status.timestamp) if status.timestamp is not None else (0, 0)


def should_fold(tail_bytes: int, snapshot_bytes: int, state: TaskState) -> bool:
    """Whether to write the folded snapshot back now (see "When to fold")."""
    return tail_bytes > max(snapshot_bytes, FOLD_MIN_BYTES) or (
        tail_bytes > 0 and is_settled(state)
    )


def fold(task: Task, events: Iterable[LogEvent], history_limit: int | None) -> Task:
    """Apply logged events to ``task`` in place, in time linear in their size; returns ``task``.

    Args:
        task: The snapshot the events follow (a fresh copy: it is changed).
        events: Logged events, in order. A ``task`` event starts over from that task.
        history_limit: Most messages kept (:func:`~.history.trim_history`).
    """
    return fold_objects(task, (_member(event) for event in events), history_limit)


def _member(event: LogEvent) -> Applied | None:
    frame = codec.decode(StreamResponse, event.body)
    for member in (frame.task, frame.artifact_update, frame.status_update, frame.message):
        if member is not None:
            return member
    return None  # a kind this version does not know: skipped, as before


def fold_objects(task: Task, events: Iterable[Applied | None], history_limit: int | None) -> Task:
    """:func:`fold` of events decoded already (the caller's to change; ``None`` is skipped)."""
    chunks: dict[str, builtins.list[TaskArtifactUpdateEvent]] = {}
    rest: builtins.list[TaskStatusUpdateEvent | Message] = []
    for event in events:
        if isinstance(event, Task):
            task, chunks, rest = event, {}, []
        elif isinstance(event, TaskArtifactUpdateEvent) and event.artifact is not None:
            chunks.setdefault(event.artifact.artifact_id, []).append(event)
        elif isinstance(event, TaskStatusUpdateEvent | Message):
            rest.append(event)
    for group in chunks.values():
        _fold_artifact(task, group)
    for item in rest:
        apply(task, item, now=_EPOCH)
    trim_history(task, history_limit)
    return task


def _fold_artifact(task: Task, group: builtins.list[TaskArtifactUpdateEvent]) -> None:
    """Apply one artifact's events: the last replacing one (or the first, if new), then the rest."""
    artifact_id = _artifact(group[0]).artifact_id
    start = max((i for i, event in enumerate(group) if not event.append), default=None)
    if start is None and all(a.artifact_id != artifact_id for a in task.artifacts):
        start = 0
    if start is not None:
        apply(task, group[start], now=_EPOCH)
        group = group[start + 1 :]
    if not group:
        return
    chunks = [_artifact(event) for event in group]
    combined = Artifact(
        artifact_id=artifact_id,
        name=next((c.name for c in reversed(chunks) if c.name), ""),
        description=next((c.description for c in reversed(chunks) if c.description), ""),
        parts=[part for c in chunks for part in c.parts],
        metadata=next((c.metadata for c in reversed(chunks) if c.metadata is not None), None),
        extensions=[extension for c in chunks for extension in c.extensions],
    )
    apply(task, TaskArtifactUpdateEvent(artifact=combined, append=True), now=_EPOCH)


def _artifact(event: TaskArtifactUpdateEvent) -> Artifact:
    assert event.artifact is not None  # prepare() refuses an artifact update without one
    return event.artifact


def remember(heads: OrderedDict[str, H], task_id: str, head: H, most: int) -> None:
    """Keep ``head`` as the most recently used of ``heads``, dropping the least past ``most``."""
    heads[task_id] = head
    heads.move_to_end(task_id)
    while len(heads) > most:
        heads.popitem(last=False)


class Waiters:
    """Readers waiting for a task's next commit; a store calls :meth:`wake` after each one."""

    def __init__(self) -> None:
        self._futures: dict[str, set[asyncio.Future[None]]] = {}

    def wake(self, task_id: str) -> None:
        """Release everyone waiting on ``task_id``."""
        for future in self._futures.pop(task_id, ()):
            if not future.done():
                future.set_result(None)

    async def wait(
        self, task_id: str, ready: Callable[[], Awaitable[bool]], timeout: float
    ) -> bool:
        """Wait for a wake, unless ``ready()`` is true already (checked after registering).

        Returns:
            ``True`` if ready or woken, ``False`` after ``timeout`` seconds.
        """
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._futures.setdefault(task_id, set()).add(future)
        try:
            if await ready():
                return True
            await asyncio.wait((future,), timeout=timeout)
            return future.done()
        finally:
            waiting = self._futures.get(task_id)
            if waiting is not None:
                waiting.discard(future)
                if not waiting:
                    del self._futures[task_id]
