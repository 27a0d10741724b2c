"""The bounded, ordered queue of one open stream, and the subscription the stream writer holds.

A :class:`~a2a_wire.server._hub.TaskHub` pushes each encoded StreamResponse of its task to every
:class:`Subscriber`, in the order the events were applied; the HTTP side
(:mod:`a2a_wire.server._streaming`) takes them with :meth:`Subscriber.next`.

Subscriber queues are bounded. Pushing never waits: a subscriber whose queue is full has its
backlog dropped and replaced by one error, after which it takes nothing more. The agent and the
other streams never wait for a slow reader, and a slow reader never holds more than the limit.

A :class:`Subscription` is what a streaming method hands to the stream writer: the subscriber
plus what must be undone when the HTTP response ends (detaching from the hub and the hold on
it, see :meth:`~a2a_wire.server._hub.TaskHub.open_stream`). This module uses asyncio but not
aiohttp.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import enum

from a2a_wire.errors import InternalError, ProtocolError

__all__ = ["END", "KEEPALIVE", "Item", "Subscriber", "Subscription"]


class Signal(enum.Enum):
    """Non-data items a subscriber hands to its writer."""

    KEEPALIVE = "keepalive"
    END = "end"


KEEPALIVE = Signal.KEEPALIVE
END = Signal.END

Item = bytes | ProtocolError | Signal


class Subscriber:
    """The bounded, ordered queue of one open stream.

    Args:
        limit: Most frames held; see the module docstring for what happens beyond it.
        history_length: ``historyLength`` for the Task frame this stream receives.
    """

    __slots__ = ("_items", "_limit", "_waiter", "closed", "history_length")

    def __init__(self, limit: int, history_length: int | None = None) -> None:
        self._items: collections.deque[Item] = collections.deque()
        self._limit = limit
        self._waiter: asyncio.Future[None] | None = None
        self.closed = False
        self.history_length = history_length

    def push(self, frame: bytes) -> None:
        """Queue one encoded StreamResponse; never waits."""
        if self.closed:
            return
        if len(self._items) >= self._limit:
            self._items.clear()
            self._items.append(
                InternalError(
                    f"Stream closed: the reader fell more than {self._limit} events behind; "
                    "call SubscribeToTask to resume"
                )
            )
            self.closed = True
        else:
            self._items.append(frame)
        self._wake()

    def finish(self, error: ProtocolError | None = None) -> None:
        """End the stream after the queued frames, with ``error`` as its last event if given."""
        if self.closed:
            return
        self._items.append(END if error is None else error)
        self.closed = True
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def next(self, timeout: float) -> Item:
        """The next item, or :data:`KEEPALIVE` when nothing came for ``timeout`` seconds."""
        if not self._items:
            loop = asyncio.get_running_loop()
            waiter = self._waiter = loop.create_future()
            timer = loop.call_later(timeout, _expire, waiter)
            try:
                await waiter
            finally:
                timer.cancel()
                self._waiter = None
            if not self._items:
                return KEEPALIVE
        return self._items.popleft()

    def close(self) -> None:
        """Take nothing more, without an end item (the reader has gone)."""
        self.closed = True

    def ready(self) -> Item | None:
        """The next item if one is queued already, else ``None``; never waits."""
        return self._items.popleft() if self._items else None


def _expire(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


class Subscription:
    """An open stream of one task; :meth:`close` it when the HTTP response ends.

    Args:
        subscriber: The stream's queue.
        cleanup: What closing undoes (entered already); see the module docstring.
    """

    __slots__ = ("_cleanup", "subscriber")

    def __init__(self, subscriber: Subscriber, cleanup: contextlib.ExitStack) -> None:
        self.subscriber = subscriber
        self._cleanup = cleanup

    def close(self) -> None:
        """Detach from the task (idempotent); the task and other streams carry on."""
        self._cleanup.close()
