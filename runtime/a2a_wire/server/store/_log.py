"""Tasks stored as append-only event logs: the :class:`EventLogStore` protocol and shared parts.

A task (spec 4.1.1) is the fold of the events applied to it. An event log store keeps, for each
task, the log of those events, each with a per-task sequence number (1, 2, 3, ...) assigned when
it is committed, and a snapshot of the task derived from the log. The in-memory store is
:mod:`a2a_wire.server.store._log_memory`, the SQLite one :mod:`a2a_wire.server.store._log_sqlite`;
:mod:`a2a_wire.server.store._log_fold` holds what they share (checking, folding, waking), and
``tests/server/store/test_event_log.py`` is the contract every backend passes. The rules of
:mod:`a2a_wire.server.store._base` (no aliasing, owner scoping, ListTasks order, filters and
signed cursors of spec 3.1.4, recovery on open) and of :mod:`a2a_wire.server.store._push`
(configs, outbox rows written with the event that causes them) hold unchanged.

Theory of operation
-------------------
**What is logged.** Seq 1 is the task as created (a ``task`` StreamResponse). Every later event is
a status update, an artifact update or a history message (a follow-up from the client, or an
agent Message sent to an existing task). :func:`~._log_fold.prepare` checks each event with
:func:`a2a_wire._protocol.tasks.apply` against a *shell* of the task (its ids and state, no
history, no artifacts), so checking costs in proportion to the event, and stores it *as applied*:
a status carries the timestamp and bound message ``apply`` gave it, and every event names the
task's ids. A logged event is the exact StreamResponse JSON that streams and webhooks get
(``{"statusUpdate": ...}``, ``{"artifactUpdate": ...}``, ``{"message": ...}``), encoded once; the
sequence number is what a stream sends as the SSE ``id``. History messages are logged so that the
fold is complete, but they are not stream events (:attr:`LogEvent.streamed`): a stream skips them,
so the ids it shows may jump, never go back. The events of one :meth:`EventLogStore.append` call
(one executor turn) commit together or not at all; an illegal event refuses the whole batch.

**Snapshot and tail.** The store keeps the snapshot as JSON *as of* some sequence number, plus
the tail, the events logged after it. Appending writes only the event (and, for a status, the
small row of listing columns), never the snapshot, so an artifact chunk costs in proportion to
the chunk however long the artifact is. Reading folds the tail into the snapshot
(:func:`~._log_fold.fold`). The fold must stay linear in the tail: applying ``n``
``append=true`` chunks one by one copies the growing parts list ``n`` times, so the fold groups
the tail's artifact events by artifact and applies each group as at most two ``apply`` calls
(the last replacing chunk, then one chunk combining the rest). Artifact events commute with status and history events (they were all
checked when logged, and no artifact follows a terminal status), so the groups go first, in the
order their artifacts first appear, then the rest in log order. The result equals applying every
event in turn, which the contract tests check against the plain sequential fold.

**When to fold.** The store writes the folded snapshot back (and starts a new, empty tail) when
:func:`~._log_fold.should_fold` says so: the tail's bytes exceed both the snapshot's and
:data:`FOLD_MIN_BYTES`, or the task reaches a terminal or interrupted state. The first rule is
a doubling: a fold costs about ``snapshot + tail`` and follows at least ``snapshot`` bytes of
appended events, so each appended byte pays a constant share of the folds, and a read never
folds more than about one snapshot's worth of tail: reading costs O(task), not O(events). The
second rule leaves a task at rest (finished, or waiting for the client) with an empty tail, so
ListTasks over old tasks reads snapshots only. Folding on each artifact's ``lastChunk`` was not
chosen: a task with many small artifacts would rewrite its whole snapshot once per artifact.

**Reading the log.** :meth:`EventLogStore.read_events` returns the events after a sequence
number, gapless and in order. The snapshot is never the only copy of what a reader may still ask
for: events stay in the log after they are folded, until :meth:`EventLogStore.compact` drops the
ones before a number (retention decides when). A reader asking for events before that point, or
after a number the log never reached, gets :attr:`EventRange.from_snapshot` and starts again
from :meth:`EventLogStore.snapshot` (whose ``seq`` says where to resume).

**Waiting.** The log is the truth; notifications only wake readers (STYLE.md section 9).
:meth:`EventLogStore.wait_events` returns when the store has seen a commit for the task (or its
deletion or compaction), or after a timeout; the reader then reads the log again either way.
The stores here wake waiters in process, after the commit (:class:`~._log_fold.Waiters`). A
PostgreSQL store does the same from ``LISTEN``, with the timeout as its polling fallback.

**Retention.** :meth:`EventLogStore.expired` names tasks of some states unchanged since a time
(the store's clock when the state last changed, not the agent's timestamps).
:meth:`EventLogStore.delete_task` makes a task unknown at once (``TaskNotFoundError``, as if it
never existed), ending its push configs with it; :meth:`EventLogStore.purge` then removes its
events and outbox rows a small batch per call, so no transaction is long.
"""

from __future__ import annotations

import builtins
import enum
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Protocol

from a2a_wire.server.store._base import TaskPage, TaskQuery
from a2a_wire.server.store._paging import PageTokens
from a2a_wire.server.store._push import PushStore
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
    "first_turn",
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
            ListTaskPushNotificationConfigs (:mod:`a2a_wire.server.store._paging`).
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
                deadline (:mod:`a2a_wire.server.store._unavailable`).
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
        """One page of ``owner``'s tasks (spec 3.1.4; rules of :mod:`._base`).

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


async def first_turn(
    store: EventLogStore, created: Appended, task_id: str, events: Sequence[LogInput], push: bool
) -> Appended:
    """What a create took in, ``created``, followed by ``events`` appended as a second write.

    For a store whose :meth:`EventLogStore.create` cannot take ``events`` into its own
    transaction; the caller checked them before creating.
    """
    if not events:
        return created
    done = await store.append(task_id, events, push=push)
    logged = [*created.events, *done.events]
    return Appended(logged, created.outbox + done.outbox, done.state, done.task, done.task_json)
