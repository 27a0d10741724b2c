"""One open stream's cursor over its task's event log, and the subscription the writer holds.

A :class:`Subscriber` sends only what the log holds after the commit, numbered by the log; the
hub's offers merely save it a read, so a slow reader holds at most ``limit`` events and still
gets every one. Theory of operation: docs/internals/server.md, "Streams and the log". This
module uses asyncio but not aiohttp.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from a2a_wire import codec
from a2a_wire._protocol.states import is_settled, is_terminal
from a2a_wire.errors import ProtocolError, TaskNotFoundError
from a2a_wire.server import _history
from a2a_wire.server._stream_outage import DEFAULT_OUTAGE_SECONDS, KEEPALIVE, ReadOutage, Signal
from a2a_wire.server.store import (
    EventKind,
    EventLogStore,
    LogEvent,
    Snapshot,
    StoreUnavailableError,
)
from a2a_wire.types import StreamResponse, TaskState

__all__ = ["END", "KEEPALIVE", "Frame", "Item", "Subscriber", "Subscription", "snapshot_frame"]


END = Signal.END


@dataclass(frozen=True, slots=True)
class Frame:
    """One event to send.

    Attributes:
        body: The StreamResponse JSON.
        seq: Its number in the task's log, sent as the SSE ``id``; ``None`` for a direct
            Message reply, which belongs to no task.
    """

    body: bytes
    seq: int | None


Item = Frame | ProtocolError | Signal


def snapshot_frame(snapshot: Snapshot, history_length: int | None = None) -> Frame:
    """The Task event a stream starts with: the snapshot, its history cut to ``history_length``."""
    shown = _history.view(snapshot.task, history_length)
    return Frame(codec.encode(StreamResponse(task=shown)), snapshot.seq)


def _settles(event: LogEvent) -> bool:
    """Whether a logged event leaves its task terminal or interrupted."""
    if event.kind is EventKind.STATUS:
        status = codec.loads(event.body)["statusUpdate"].get("status") or {}
    elif event.kind is EventKind.TASK:
        status = codec.loads(event.body)["task"].get("status") or {}
    else:
        return False
    return is_settled(TaskState(status.get("state", TaskState.UNSPECIFIED.value)))


class Subscriber:
    """One stream's position in a task's log; see docs/internals/server.md.

    Args:
        store: The task store.
        task_id: The task.
        owner: Its owner (reads are scoped by it).
        limit: Most offered events kept in memory.
        history_length: ``historyLength`` for the Task events of this stream.
        after: The number of the last event the stream has (``Last-Event-ID``); it sends the
            ones after it.
        exists: Whether the task is stored yet; a new task's stream waits for its first offer.
        follow: Whether no agent runs on the task in this process, when other processes may
            write to it (see docs/internals/server.md); ``None`` when none do.
    """

    __slots__ = (
        "_after",
        "_cache",
        "_exists",
        "_finished",
        "_follow",
        "_limit",
        "_outage",
        "_owner",
        "_pending",
        "_stale",
        "_stopped",
        "_store",
        "_task_id",
        "_waiter",
        "closed",
        "history_length",
    )

    def __init__(
        self,
        store: EventLogStore,
        task_id: str,
        owner: str,
        limit: int,
        history_length: int | None = None,
        *,
        after: int = 0,
        exists: bool = True,
        follow: Callable[[], bool] | None = None,
    ) -> None:
        self._store = store
        self._task_id = task_id
        self._owner = owner
        self._limit = limit
        self.history_length = history_length
        self._after = after
        self._exists = exists
        self._follow = follow
        self._cache: collections.deque[LogEvent] = collections.deque()
        self._pending: collections.deque[Item] = collections.deque()
        self._finished: Item | None = None
        # The store may hold events the cache lacks: read it next. Not for a new task's stream:
        # it is there before the task, so offers bring every event from the first on.
        self._stale = exists
        self._stopped = False
        self._waiter: asyncio.Future[bool] | None = None
        self._outage = ReadOutage()
        self.closed = False

    @property
    def awaits_task(self) -> bool:
        """Whether this is a new task's stream whose task is not made yet (nothing to send)."""
        return not self._exists and not self._pending

    # -- what the hub tells it ------------------------------------------------------------------

    def offer(self, events: Sequence[LogEvent]) -> None:
        """Committed events of the task, in order; kept while the cache has room."""
        if self.closed or self._stopped or not events:
            return
        self._exists = True
        cache = self._cache
        if cache and events[0].seq != cache[-1].seq + 1:
            cache.clear()
        cache.extend(events)
        if len(cache) > self._limit:
            cache.clear()  # fallen behind: the rest comes from the store
            self._stale = True
        self._wake()

    def start_from(self, snapshot: Snapshot) -> None:
        """Send the task as of ``snapshot`` first, then the events after it."""
        self._pending.append(snapshot_frame(snapshot, self.history_length))
        self._after = snapshot.seq
        self._exists = True

    def reply(self, body: bytes) -> None:
        """The agent answered with a Message (no task): send it and end."""
        if not self._stopped:
            self._pending.extend((Frame(body, None), END))
            self._stopped = True
            self._wake()

    def finish(self, error: ProtocolError | None = None) -> None:
        """End after the events logged so far, with ``error`` as the last event if given."""
        if self._finished is None:
            self._finished = END if error is None else error
            self._stale = True  # no more offers: what is left comes from the store
            self._wake()

    def poke(self) -> None:
        """The store may hold events no offer announced: read it when next asked."""
        self._stale = True
        self._wake()

    def close(self) -> None:
        """Take nothing more (the reader has gone)."""
        self.closed = True
        self._cache.clear()

    def _wake(self) -> None:
        if self._waiter is not None:
            _settle(self._waiter, True)

    # -- what the writer takes ------------------------------------------------------------------

    async def prime(self) -> None:
        """Read the first events now, so that a missing task fails the call, not the stream.

        When there are none and the task is terminal, none will come: the stream is empty.

        Raises:
            TaskNotFoundError: the task is not (or no longer) visible to the owner.
        """
        while not self._pending and await self._fill():
            pass  # only history messages so far: read on
        if not self._pending:
            snapshot = await self._store.snapshot(self._task_id, owner=self._owner)
            if snapshot is None:
                self._end(TaskNotFoundError(metadata={"taskId": self._task_id}))
            elif snapshot.task.status is not None and is_terminal(snapshot.task.status.state):
                self._end(END)
        first = self._pending[0] if self._pending else None
        if isinstance(first, TaskNotFoundError):
            self._pending.clear()
            raise first

    def ready(self) -> Item | None:
        """The next item if one is at hand already, else ``None``; never waits."""
        return self._pending.popleft() if self._pending else None

    async def next(self, timeout: float, outage: float = DEFAULT_OUTAGE_SECONDS) -> Item:
        """The next item, or :data:`KEEPALIVE` when nothing came for ``timeout`` seconds.

        Failed reads are retried; after ``outage`` seconds of them the item is the error that
        ends the stream (:mod:`a2a_wire.server._stream_outage`).
        """
        due = asyncio.get_running_loop().time() + timeout
        while True:
            if self._pending:
                return self._pending.popleft()
            if self._stopped:
                return END
            try:
                if self._exists and await self._fill():
                    self._outage.clear()
                    continue
            except StoreUnavailableError as exc:
                if isinstance(self._finished, ProtocolError):  # e.g. the run's end unrecorded
                    self._stopped = True
                    self._cache.clear()
                    return self._finished  # no use waiting: the client resumes after the outage
                item = await self._outage.ride_out(exc, due, outage, self._task_id)
                if isinstance(item, ProtocolError):  # lasted too long: the stream ends with it
                    self._stopped = True
                    self._cache.clear()
                if item is not None:
                    return item
                continue
            self._outage.clear()
            if self._finished is not None:
                self._stopped = True
                return self._finished
            if not await self._wait(timeout):
                return KEEPALIVE

    async def _fill(self) -> bool:
        """Queue what follows the position, from the cache or the store; whether it moved on."""
        events = self._cached()
        if not events:
            if not self._stale and not self._cache:
                return False  # nothing was committed since; wait for an offer
            got = await self._store.read_events(
                self._task_id, self._after, owner=self._owner, limit=self._limit
            )
            if got is None:
                self._end(TaskNotFoundError(metadata={"taskId": self._task_id}))
                return True
            if got.from_snapshot:
                return await self._restart()
            events = got.events
            self._stale = len(events) >= self._limit  # a full batch: there may be more
        for event in events:
            self._after = event.seq
            if event.streamed:
                self._pending.append(self._frame(event))
            if _settles(event):
                self._end(END)
                break
        return bool(events)

    def _cached(self) -> list[LogEvent]:
        cache = self._cache
        while cache and cache[0].seq <= self._after:
            cache.popleft()
        if not cache or cache[0].seq != self._after + 1:
            return []
        events = list(cache)
        cache.clear()
        return events

    async def _restart(self) -> bool:
        """The events asked for are gone (compacted): send the task as it is now instead."""
        snapshot = await self._store.snapshot(self._task_id, owner=self._owner)
        if snapshot is None:
            self._end(TaskNotFoundError(metadata={"taskId": self._task_id}))
            return True
        self.start_from(snapshot)
        if snapshot.task.status is not None and is_terminal(snapshot.task.status.state):
            self._end(END)
        return True

    def _frame(self, event: LogEvent) -> Frame:
        if event.kind is EventKind.TASK and self.history_length is not None:
            task = codec.decode(StreamResponse, event.body).task
            assert task is not None  # a task event holds the task
            shown = _history.view(task, self.history_length)
            return Frame(codec.encode(StreamResponse(task=shown)), event.seq)
        return Frame(event.body, event.seq)

    def _end(self, last: Item) -> None:
        if last is not END:
            self._pending.append(last)
        self._pending.append(END)
        self._stopped = True
        self._cache.clear()

    async def _wait(self, timeout: float) -> bool:
        """Wait for an offer or a finish; ``False`` after ``timeout`` seconds (then read again)."""
        if self._follow is not None and self._follow():
            return await self._watch(timeout)
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[bool] = loop.create_future()
        self._waiter = waiter
        timer = loop.call_later(timeout, _settle, waiter, False)
        try:
            woken = await waiter
        finally:
            timer.cancel()
            self._waiter = None
        self._stale = self._stale or not woken
        return woken

    async def _watch(self, timeout: float) -> bool:
        """:meth:`_wait`, also woken by the store (the agent runs in another process)."""
        waiter: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._waiter = waiter
        watch = asyncio.ensure_future(self._store_wait(timeout))
        try:
            await asyncio.wait((waiter, watch), return_when=asyncio.FIRST_COMPLETED)
        finally:
            watch.cancel()
            self._waiter = None
        self._stale = True
        return waiter.done() or (watch.done() and not watch.cancelled() and watch.result())

    async def _store_wait(self, timeout: float) -> bool:
        try:
            return await self._store.wait_events(self._task_id, self._after, timeout=timeout)
        except Exception:  # the store is unreachable now: an offer or the time wakes instead
            await asyncio.sleep(timeout)
            return False


def _settle(waiter: asyncio.Future[bool], woken: bool) -> None:
    if not waiter.done():
        waiter.set_result(woken)


class Subscription:
    """An open stream of one task; :meth:`close` it when the HTTP response ends.

    Args:
        subscriber: The stream's position.
        cleanup: Undoes what opening the stream did (called once); see docs/internals/server.md.
    """

    __slots__ = ("_cleanup", "subscriber")

    def __init__(self, subscriber: Subscriber, cleanup: Callable[[], None]) -> None:
        self.subscriber = subscriber
        self._cleanup: Callable[[], None] | None = cleanup

    def close(self) -> None:
        """Detach from the task (idempotent); the task and other streams carry on."""
        cleanup, self._cleanup = self._cleanup, None
        if cleanup is not None:
            cleanup()
