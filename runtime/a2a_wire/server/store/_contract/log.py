"""Tasks stored as append-only event logs: the :class:`EventLogStore` protocol and its values.

A task is the fold of its logged events, each numbered per task at commit; a snapshot is kept
current from the log, and events stay readable after a fold until compaction drops them. How
events are logged, folded, read, awaited and retired: docs/internals/store.md, "The event log".
"""

from __future__ import annotations

import builtins
import enum
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Protocol

from a2a_wire.server.store._contract.push import PushStore
from a2a_wire.server.store._contract.tasks import TaskPage, TaskQuery
from a2a_wire.server.store._fold.paging import PageTokens
from a2a_wire.types import (
    Message,
    Task,
    TaskArtifactUpdateEvent,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatusUpdateEvent,
)

__all__ = [
    "FOLD_MIN_BYTES",
    "PURGE_BATCH",
    "READ_LIMIT",
    "Appended",
    "EventKind",
    "EventLogStore",
    "EventRange",
    "LogEvent",
    "LogInput",
    "Snapshot",
]

FOLD_MIN_BYTES = 64 * 1024
"""A tail smaller than this is never folded on size alone (small tasks are cheap to fold)."""

READ_LIMIT = 1000
"""Most events one :meth:`EventLogStore.read_events` call returns unless told otherwise."""

PURGE_BATCH = 500
"""Default rows deleted per transaction by compaction and purge."""

LogInput = TaskStatusUpdateEvent | TaskArtifactUpdateEvent | Message
"""What :meth:`EventLogStore.append` takes: the events an executor turn applies to a task."""


class EventKind(enum.IntEnum):
    """What a logged event is; stored as its integer."""

    TASK = 1
    STATUS = 2
    ARTIFACT = 3
    MESSAGE = 4


@dataclass(frozen=True, slots=True)
class LogEvent:
    """One committed event.

    Attributes:
        seq: Its number in the task's log: 1 for the task as created, then 2, 3, ...
        kind: What it is.
        body: The StreamResponse JSON, as streams (with ``seq`` as the SSE ``id``) and webhooks
            get it.
    """

    seq: int
    kind: EventKind
    body: bytes

    @property
    def streamed(self) -> bool:
        """Whether a stream sends it; history messages only change the snapshot."""
        return self.kind is not EventKind.MESSAGE


@dataclass(frozen=True, slots=True)
class Appended:
    """What a create or append committed.

    Attributes:
        events: The events, in order, with their sequence numbers.
        outbox: Push outbox rows added in the same transaction.
        state: The task's state after them (a stream ends at a terminal or interrupted one).
        task: The task as of the last of them when the store folded its log in the same call
            (the memory and SQLite stores do whenever they leave it terminal or interrupted,
            see "When to fold"; the PostgreSQL store too unless another append came between):
            a fresh copy owned by the caller, equal to what
            :meth:`EventLogStore.get` would read now. ``None`` otherwise (a caller reads then).
        task_json: ``task`` as JSON (:func:`a2a_wire.codec.encode`), when the store wrote it
            as the snapshot anyway (a SendMessage answer splices it); else ``None``.
    """

    events: list[LogEvent]
    outbox: int
    state: TaskState
    task: Task | None = None
    task_json: bytes | None = None


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A task as of a point in its log.

    Attributes:
        task: The task, a fresh copy owned by the caller.
        seq: The last event folded into it; a reader resumes with the events after it.
    """

    task: Task
    seq: int


@dataclass(frozen=True, slots=True)
class EventRange:
    """The answer to :meth:`EventLogStore.read_events`.

    Attributes:
        events: Events after the number asked for, gapless, oldest first; empty when there are
            none yet (or ``from_snapshot``).
        from_snapshot: The events asked for are not all in the log: compacted, or the number
            is beyond the log. Start again from :meth:`EventLogStore.snapshot`.
    """

    events: list[LogEvent]
    from_snapshot: bool = False


class EventLogStore(PushStore, Protocol):
    """Tasks as append-only event logs, scoped by owner; see the module docstring.

    Attributes:
        page_tokens: Signs and checks this store's page tokens: ListTasks' and those of
            ListTaskPushNotificationConfigs (:mod:`a2a_wire.server.store._fold.paging`).
    """

    page_tokens: PageTokens

    async def open(self) -> builtins.list[str]:
        """Prepare the store and fail the SUBMITTED/WORKING tasks a restart interrupted.

        Returns:
            Ids of the tasks that got a FAILED status event (and its outbox rows).
        """
        ...

    async def close(self) -> None:
        """Release resources; the data stays for the next ``open``."""
        ...

    async def ping(self) -> None:
        """Check, with one bounded round trip, that the store can serve calls (readiness).

        A persistent store reads the tables requests need, so that one locked by another
        program fails the ping as it would fail the requests.

        Raises:
            StoreUnavailableError: the database cannot be reached within the store's
                deadline (:mod:`a2a_wire.server.store._contract.errors`).
        """
        ...

    async def create(
        self,
        task: Task,
        *,
        owner: str = "",
        push_configs: Sequence[TaskPushNotificationConfig] = (),
        push: bool = False,
        events: Sequence[LogInput] = (),
    ) -> Appended:
        """Store a new task as event 1 of its log, with push configs, in one transaction.

        Args:
            task: The task; its history is trimmed to the store's history limit.
            owner: The caller owning it.
            push_configs: Configs stored with it.
            push: Put event 1 (and each streamed event of ``events``) in the outbox for each of
                the task's configs.
            events: The task's first turn, logged as events 2, 3, ... as if appended right
                after (checked, numbered, folded by the same rules). The memory and SQLite
                stores commit them with the task, in the same transaction (on SQLite one
                thread hop and one commit); PostgreSQL commits the task, then the events, as
                two writes, the way a create and an append would.

        Raises:
            ValueError: the task has no id, or its id is taken.
            InvalidTransitionError: an event of ``events`` is illegal; nothing was stored (the
                caller may create the task without it). Checked before the id is looked up.
        """
        ...

    async def append(
        self, task_id: str, events: Sequence[LogInput], *, push: bool = False
    ) -> Appended:
        """Check and commit one turn's events as the next entries of the log, in one transaction.

        Args:
            task_id: The task.
            events: At least one event, applied in order.
            push: Put each streamed event in the outbox for each of the task's configs.

        Raises:
            TaskNotFoundError: no such task.
            InvalidTransitionError: an event is illegal; nothing was stored.
            ValueError: ``events`` is empty.
        """
        ...

    async def get(self, task_id: str, *, owner: str = "") -> Task | None:
        """``owner``'s task as of its last event, or ``None``."""
        ...

    async def snapshot(self, task_id: str, *, owner: str = "") -> Snapshot | None:
        """``owner``'s task with the number of its last event, or ``None``."""
        ...

    async def list(self, query: TaskQuery, *, owner: str = "") -> TaskPage:
        """One page of ``owner``'s tasks (spec 3.1.4; rules of :mod:`a2a_wire.server.store._fold.keys`).

        Raises:
            InvalidParamsError: the page token is not one this store issued for this query.
        """
        ...

    async def read_events(
        self, task_id: str, after_seq: int, *, owner: str = "", limit: int = READ_LIMIT
    ) -> EventRange | None:
        """At most ``limit`` events numbered above ``after_seq``; ``None`` if no such task.

        Raises:
            ValueError: ``after_seq`` is negative or ``limit`` below 1.
        """
        ...

    async def wait_events(self, task_id: str, after_seq: int, *, timeout: float) -> bool:
        """Wait until the log may hold an event above ``after_seq``, or ``timeout`` seconds.

        Returns:
            ``True`` when woken (or there are events already), ``False`` on timeout. A wake is
            a hint: read again in both cases.
        """
        ...

    async def compact(self, task_id: str, through_seq: int, *, batch: int = PURGE_BATCH) -> int:
        """Drop up to ``batch`` of the events numbered ``through_seq`` or lower.

        The snapshot absorbs them first if it has not. Call again until it returns 0.

        Returns:
            The number of events dropped.
        """
        ...

    async def expired(
        self, states: Collection[TaskState], before: float, *, limit: int, logged: bool = False
    ) -> builtins.list[str]:
        """Up to ``limit`` tasks in ``states`` whose state last changed before ``before``.

        Args:
            states: The states to look for.
            before: A time of the store's clock (seconds since the epoch).
            limit: Most ids returned, oldest change first.
            logged: Only tasks that still have events in their log (candidates for compaction).
        """
        ...

    async def delete_task(self, task_id: str) -> bool:
        """Make a task unknown at once, with its push configs; ``False`` if there was none.

        Its events and outbox rows go with later :meth:`purge` calls.
        """
        ...

    async def purge(self, *, batch: int = PURGE_BATCH) -> int:
        """Delete up to ``batch`` rows left by deleted tasks; call again until it returns 0."""
        ...
