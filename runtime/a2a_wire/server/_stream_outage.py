"""How an open stream rides out a task store that fails its reads, and when it gives up.

A subscriber (:mod:`a2a_wire.server._subscriber`) whose read raises
:class:`~a2a_wire.server.store.StoreUnavailableError` asks :class:`ReadOutage` what to do: wait
a backoff step (0.1 s doubling to 2 s, never past the next keep-alive) and read again, hand out a
keep-alive when one is due, or, once reads have failed for ``stream_outage_seconds`` in a row,
end the stream with that error naming the task, so the client resumes it later with
SubscribeToTask and ``Last-Event-ID``. A successful read ends the outage.
"""

from __future__ import annotations

import asyncio
import enum

from a2a_wire.server.store import StoreUnavailableError

__all__ = ["DEFAULT_OUTAGE_SECONDS", "KEEPALIVE", "OUTAGE_BACKOFF_SECONDS", "ReadOutage", "Signal"]

DEFAULT_OUTAGE_SECONDS = 10.0
"""``ServerSettings.stream_outage_seconds``'s default: how long reads may fail before the end."""
OUTAGE_BACKOFF_SECONDS = (0.1, 2.0)
"""First and longest wait between two reads of a store that failed the last one."""


class Signal(enum.Enum):
    """Non-data items a subscriber hands to its writer."""

    KEEPALIVE = "keepalive"
    END = "end"


KEEPALIVE = Signal.KEEPALIVE


class ReadOutage:
    """One subscriber's run of failed reads (module docstring)."""

    __slots__ = ("_backoff", "_since")

    def __init__(self) -> None:
        self._since: float | None = None  # loop time of the first failed read in a row
        self._backoff = OUTAGE_BACKOFF_SECONDS[0]

    def clear(self) -> None:
        """A read succeeded: the outage, if any, is over."""
        self._since = None

    async def ride_out(
        self, exc: StoreUnavailableError, due: float, limit: float, task_id: str
    ) -> StoreUnavailableError | Signal | None:
        """After a failed read: what the subscriber does next.

        Args:
            exc: What the read raised.
            due: Loop time at which a keep-alive is due.
            limit: ``stream_outage_seconds``.
            task_id: The stream's task, named in the final error.

        Returns:
            ``None`` after a backoff wait (read again), :data:`KEEPALIVE` when one is due, or
            the error that ends the stream (ErrorInfo ``taskId``) once failures lasted ``limit``.
        """
        now = asyncio.get_running_loop().time()
        if self._since is None:
            self._since, self._backoff = now, OUTAGE_BACKOFF_SECONDS[0]
        lasted = now - self._since
        if lasted >= limit:
            return _ended(exc, task_id, lasted)
        if now >= due:
            return KEEPALIVE
        await asyncio.sleep(min(self._backoff, due - now, limit - lasted))
        self._backoff = min(self._backoff * 2, OUTAGE_BACKOFF_SECONDS[1])
        return None


def _ended(exc: StoreUnavailableError, task_id: str, lasted: float) -> StoreUnavailableError:
    error = StoreUnavailableError(
        f"The task store has been unavailable for {lasted:.0f} s; resume task {task_id} with"
        " SubscribeToTask (Last-Event-ID: the last id received)",
        retry_after=exc.retry_after,
    )
    error.metadata["taskId"] = task_id
    error.__cause__ = exc
    return error
