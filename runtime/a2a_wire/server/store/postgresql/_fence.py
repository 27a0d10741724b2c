"""Fencing: a process whose heartbeats stop reaching PostgreSQL stops its runs before its leases expire.

A lease lasts ``lease_seconds`` from the heartbeat that renewed it, by the database's clock.
When heartbeats fail (the database is down, or this process's connection is stalled), the
leases run out while the process's agents still work, and another process then fails those
tasks: two writers of one task. So the store keeps a :class:`Fence`, a timer re-armed by each
successful heartbeat at the time that beat *started* (never later than the database's own
time of the renewal) plus ``lease_seconds`` minus a margin (the heartbeat's deadline). When it
fires, the store gives each lease last confirmed (taken or renewed) that long ago to its
``on_lease_lost`` callbacks and forgets it; the runtime stops those runs. The margin leaves
them that long to stop before another process may take the tasks over. A lease taken since
(the database answered a write again before the next heartbeat) is kept until its own time
comes. While heartbeats keep failing the timer fires again every margin, or sooner when a
kept lease falls due.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

__all__ = ["Fence"]


class Fence:
    """A timer that calls ``on_fence`` once no heartbeat has succeeded for ``after`` seconds.

    Args:
        after: Seconds from the start of the last successful heartbeat.
        again: Seconds between later calls while no heartbeat succeeds.
        on_fence: Called on the event loop when the timer fires; returns the loop time at
            which it should fire next at the latest (``None``: every ``again`` seconds).
    """

    def __init__(self, after: float, again: float, on_fence: Callable[[], float | None]) -> None:
        self.after = after
        self.again = again
        self._on_fence = on_fence
        self._handle: asyncio.TimerHandle | None = None
        self._active = False

    def start(self, started: float) -> None:
        """Arm the timer (the keeper is running); ``started``: loop time of the last good beat."""
        self._active = True
        self.beat(started)

    def beat(self, started: float) -> None:
        """A heartbeat that started at loop time ``started`` succeeded: arm from it."""
        if not self._active:
            return
        self._cancel()
        loop = asyncio.get_running_loop()
        self._handle = loop.call_at(started + self.after, self._fire)

    def stop(self) -> None:
        """Disarm the timer (the keeper stopped)."""
        self._active = False
        self._cancel()

    def _cancel(self) -> None:
        handle, self._handle = self._handle, None
        if handle is not None:
            handle.cancel()

    def _fire(self) -> None:
        self._handle = None
        due = self._on_fence()
        if self._active:  # fire again while no heartbeat succeeds, sooner for a kept lease
            loop = asyncio.get_running_loop()
            at = loop.time() + self.again
            self._handle = loop.call_at(at if due is None else min(at, due), self._fire)
