"""The in-memory task store: tasks as event logs in process memory, for tests and small servers.

Everything is synchronous between awaits, so an append with its outbox rows is one step. At most
``max_tasks`` tasks are held: a new one first forgets the task at rest that changed state
longest ago, never one an agent works on. See docs/internals/store.md, "The in-memory store".
"""

from __future__ import annotations

import bisect
import builtins
import logging
import time
from collections.abc import Callable, Collection, Sequence

from a2a_wire import codec
from a2a_wire._protocol.states import is_interrupted, is_terminal
from a2a_wire._protocol.tasks import now_timestamp
from a2a_wire.errors import TaskNotFoundError
from a2a_wire.server.store._contract.log import (
    PURGE_BATCH,
    READ_LIMIT,
    Appended,
    EventLogStore,
    EventRange,
    LogEvent,
    LogInput,
    Snapshot,
)
from a2a_wire.server.store._contract.tasks import RECOVERED_STATES, TaskPage, TaskQuery
from a2a_wire.server.store._fold.create import new_task
from a2a_wire.server.store._fold.events import (
    Prepared,
    Shadow,
    Waiters,
    fold,
    prepare,
    restart_event,
    should_fold,
    status_instant,
)
from a2a_wire.server.store._fold.history import DEFAULT_HISTORY_LIMIT
from a2a_wire.server.store._fold.keys import (
    TaskCursor,
    state_filter,
    state_key,
    status_key,
    timestamp_key,
)
from a2a_wire.server.store._fold.paging import PageTokens
from a2a_wire.server.store._fold.reads import Found, check_range, list_page
from a2a_wire.server.store.memory._entry import Entry
from a2a_wire.server.store.memory._push import InMemoryPushStore
from a2a_wire.types import Task, TaskPushNotificationConfig, TaskState

__all__ = ["DEFAULT_MAX_TASKS", "InMemoryTaskStore"]

log = logging.getLogger("a2a_wire.server.store")

DEFAULT_MAX_TASKS = 10_000
"""Most tasks an :class:`InMemoryTaskStore` holds unless told otherwise (module docstring)."""


class InMemoryTaskStore(InMemoryPushStore, EventLogStore):
    """Tasks as event logs in process memory, for tests and small deployments.

    Data survives ``close`` and a later ``open`` of the same instance (which runs recovery), but
    not the process. Listing sorts all of an owner's matching tasks.

    Args:
        page_token_key: HMAC key for page tokens; random when ``None`` (see
            :class:`~a2a_wire.server.store._fold.paging.PageTokens`).
        history_limit: Most messages a task keeps (``ServerSettings.max_history_per_task``);
            ``None`` keeps all.
        clock: Seconds since the epoch, for the state-change times retention reads.
        max_tasks: Most tasks held (module docstring; ``ServerSettings.memory_max_tasks``).

    Raises:
        ValueError: ``max_tasks`` is below 1.
    """

    def __init__(
        self,
        *,
        page_token_key: bytes | None = None,
        history_limit: int | None = DEFAULT_HISTORY_LIMIT,
        clock: Callable[[], float] = time.time,
        max_tasks: int = DEFAULT_MAX_TASKS,
    ) -> None:
        if max_tasks < 1:
            raise ValueError(f"max_tasks must be positive, not {max_tasks!r}")
        self._entries: dict[str, Entry] = {}
        self.page_tokens = PageTokens(page_token_key)
        self._history_limit = history_limit
        self._clock = clock
        self._max_tasks = max_tasks
        # Tasks at rest, oldest state change first: the ones the cap forgets, in that order.
        self._resting: tuple[dict[str, None], dict[str, None]] = ({}, {})
        self._waiters = Waiters()
        self._open = False
        self._init_push()

    def _require_open(self) -> None:
        if not self._open:
            raise RuntimeError("the task store is not open; call open() first")

    def _entry(self, task_id: str, owner: str | None = None) -> Entry | None:
        self._require_open()
        entry = self._entries.get(task_id)
        return None if entry is None or (owner is not None and entry.owner != owner) else entry

    async def open(self) -> builtins.list[str]:
        """Mark the store open and log a FAILED status for each task a restart interrupted.

        Raises:
            RuntimeError: the store is already open.
        """
        if self._open:
            raise RuntimeError("the task store is already open")
        self._open = True
        now = now_timestamp()
        failed = [task_id for task_id, e in self._entries.items() if e.state in RECOVERED_STATES]
        for task_id in failed:
            entry = self._entries[task_id]
            event = restart_event(task_id, entry.context_id, now)
            batch = prepare(task_id, entry.context_id, entry.state, [event], now, entry.shadow)
            self._commit(task_id, entry, batch, True)
        return failed

    async def close(self) -> None:
        """Mark the store closed; the tasks stay for the next ``open``."""
        self._open = False

    async def ping(self) -> None:
        """Always ready: the tasks are in this process's memory."""

    async def create(
        self,
        task: Task,
        *,
        owner: str = "",
        push_configs: Sequence[TaskPushNotificationConfig] = (),
        push: bool = False,
        events: Sequence[LogInput] = (),
    ) -> Appended:
        """Store a new task as event 1 of its log, then ``events``, in one step (see the protocol).

        Raises:
            ValueError: the task has no id, or its id is taken.
            InvalidTransitionError: an event of ``events`` is illegal; nothing was stored.
        """
        self._require_open()
        new = new_task(task, self._history_limit)
        stored, state, base, first = new.stored, new.state, new.body, new.first
        shadow = Shadow.of(stored, len(base))
        prepared = None
        if events:  # checked before anything is stored (or looked up)
            prepared = prepare(task.id, stored.context_id, state, events, shadow=shadow)
        if task.id in self._entries:
            raise ValueError(f"task {task.id!r} is already stored")
        self._make_room()
        row = (owner, stored.context_id, state, status_key(stored), self._clock(), base)
        entry = Entry(*row, 1, 1, [first.body], bytearray((first.kind,)))
        entry.shadow = shadow
        self._entries[task.id] = entry
        self._rest(task.id, state)
        self._put_configs(push_configs)
        outbox = self._enqueue_push(task.id, first.body) if push else 0
        if prepared is None:
            self._waiters.wake(task.id)
            return Appended([first], outbox, state)
        done = self._commit(task.id, entry, prepared, push)  # no await: one step with the create
        logged = [first, *done.events]
        return Appended(logged, outbox + done.outbox, done.state, done.task, done.task_json)

    async def append(
        self, task_id: str, events: Sequence[LogInput], *, push: bool = False
    ) -> Appended:
        """Check and commit one turn's events (see the protocol).

        Raises:
            TaskNotFoundError: no such task.
            InvalidTransitionError: an event is illegal; nothing was stored.
            ValueError: ``events`` is empty.
        """
        entry = self._entry(task_id)
        if entry is None:
            raise TaskNotFoundError(metadata={"taskId": task_id})
        if not events:
            raise ValueError("an append needs at least one event")
        prepared = prepare(task_id, entry.context_id, entry.state, events, shadow=entry.shadow)
        return self._commit(task_id, entry, prepared, push)

    def _commit(self, task_id: str, entry: Entry, prepared: Prepared, push: bool) -> Appended:
        entry.shadow = Shadow.after(entry.shadow, prepared)
        logged: builtins.list[LogEvent] = []
        outbox = 0
        for kind, body in prepared.frames:
            event = LogEvent(entry.head + 1, kind, body)
            entry.log(event)
            entry.tail_bytes += len(body)
            logged.append(event)
            if push and event.streamed:
                outbox += self._enqueue_push(task_id, body)
        if prepared.status is not None:
            entry.state = prepared.status.state
            entry.status = status_instant(prepared.status)
            entry.changed_at = self._clock()
            self._rest(task_id, entry.state)
        folded = snapshot = None
        if should_fold(entry.tail_bytes, len(entry.base), entry.state):
            shadow, entry.shadow = entry.shadow, None  # fresh objects; the store keeps JSON only
            folded = self._fold(entry) if shadow is None else shadow.fold(self._history_limit)
            entry.base = snapshot = codec.encode(folded)
            entry.base_seq, entry.tail_bytes = entry.head, 0
        self._waiters.wake(task_id)
        return Appended(logged, outbox, entry.state, folded, snapshot)

    def _rest(self, task_id: str, state: TaskState | None) -> None:
        """Move the task to the end of its resting queue (``None``: out of both)."""
        terminal, interrupted = self._resting
        terminal.pop(task_id, None)
        interrupted.pop(task_id, None)
        if state is not None and is_terminal(state):
            terminal[task_id] = None
        elif state is not None and is_interrupted(state):
            interrupted[task_id] = None

    def _make_room(self) -> None:
        """Forget tasks at rest until one more fits under the cap (module docstring)."""
        while len(self._entries) >= self._max_tasks:
            queue = next((q for q in self._resting if q), None)
            if queue is None:
                log.warning("the in-memory task store holds %d active tasks", len(self._entries))
                return
            self._forget(next(iter(queue)))

    def _forget(self, task_id: str) -> None:
        del self._entries[task_id]
        self._rest(task_id, None)
        self._push_configs.pop(task_id, None)
        for lane in [lane for lane in self._lanes if lane[0] == task_id]:
            del self._lanes[lane]
        for seq in [seq for seq, row in self._outbox.items() if row.task_id == task_id]:
            del self._outbox[seq]
        self._waiters.wake(task_id)

    def _fold(self, entry: Entry) -> Task:
        return fold(codec.decode(Task, entry.base), entry.tail(), self._history_limit)

    async def get(self, task_id: str, *, owner: str = "") -> Task | None:
        """A fresh copy of ``owner``'s task, or ``None``."""
        entry = self._entry(task_id, owner)
        return None if entry is None else self._fold(entry)

    async def snapshot(self, task_id: str, *, owner: str = "") -> Snapshot | None:
        """``owner``'s task with the number of its last event, or ``None``."""
        entry = self._entry(task_id, owner)
        return None if entry is None else Snapshot(self._fold(entry), entry.head)

    async def list(self, query: TaskQuery, *, owner: str = "") -> TaskPage:
        """One page of ``owner``'s tasks matching ``query``, newest status first.

        Raises:
            InvalidParamsError: the page token is not valid for this query.
        """
        self._require_open()
        return await list_page(
            self.page_tokens, query, owner, lambda at: self._page(query, owner, at)
        )

    async def _page(self, query: TaskQuery, owner: str, after: TaskCursor | None) -> Found:
        state = state_filter(query)
        since = timestamp_key(query.status_after) if query.status_after is not None else None
        matches = sorted(
            (-e.status[0], -e.status[1], task_id)
            for task_id, e in self._entries.items()
            if e.owner == owner
            and (not query.context_id or e.context_id == query.context_id)
            and (state is None or state_key(e.state) == state)
            and (since is None or e.status >= since)
        )
        cursor = None if after is None else (-after[0], -after[1], after[2])
        start = 0 if cursor is None else bisect.bisect_right(matches, cursor)
        page = matches[start : start + query.page_size]
        last = None
        if start + query.page_size < len(matches):
            seconds, nanos, last_id = page[-1]
            last = (-seconds, -nanos, last_id)
        return [self._fold(self._entries[m[2]]) for m in page], last, len(matches)

    async def read_events(
        self, task_id: str, after_seq: int, *, owner: str = "", limit: int = READ_LIMIT
    ) -> EventRange | None:
        """Events numbered above ``after_seq`` (see the protocol).

        Raises:
            ValueError: ``after_seq`` is negative or ``limit`` below 1.
        """
        check_range(after_seq, limit)
        entry = self._entry(task_id, owner)
        if entry is None:
            return None
        if after_seq + 1 < entry.first_seq or after_seq > entry.head:
            return EventRange([], from_snapshot=True)
        start = after_seq + 1 - entry.first_seq
        return EventRange(entry.events(start, start + limit))

    async def wait_events(self, task_id: str, after_seq: int, *, timeout: float) -> bool:
        """Wait for an event above ``after_seq`` (see the protocol)."""

        async def ready() -> bool:
            entry = self._entries.get(task_id)
            return entry is None or entry.head > after_seq

        return await self._waiters.wait(task_id, ready, timeout)

    async def compact(self, task_id: str, through_seq: int, *, batch: int = PURGE_BATCH) -> int:
        """Drop up to ``batch`` events numbered ``through_seq`` or lower (see the protocol)."""
        entry = self._entry(task_id)
        if entry is None:
            return 0
        through = min(through_seq, entry.head)
        if entry.base_seq < through:
            entry.shadow = None
            entry.base = codec.encode(self._fold(entry))
            entry.base_seq, entry.tail_bytes = entry.head, 0
        count = max(0, min(batch, through - entry.first_seq + 1))
        if count:
            entry.drop(count)
            self._waiters.wake(task_id)
        return count

    async def expired(
        self, states: Collection[TaskState], before: float, *, limit: int, logged: bool = False
    ) -> builtins.list[str]:
        """Tasks in ``states`` unchanged since ``before``, oldest first (see the protocol)."""
        self._require_open()
        found = sorted(
            (e.changed_at, task_id)
            for task_id, e in self._entries.items()
            if e.state in states and e.changed_at < before and (not logged or e.bodies)
        )
        return [task_id for _, task_id in found[:limit]]

    async def delete_task(self, task_id: str) -> bool:
        """Forget a task with its events, push configs and outbox rows, at once."""
        if self._entry(task_id) is None:
            return False
        self._forget(task_id)
        return True

    async def purge(self, *, batch: int = PURGE_BATCH) -> int:
        """Nothing is left to purge: :meth:`delete_task` frees everything at once."""
        self._require_open()
        return 0
