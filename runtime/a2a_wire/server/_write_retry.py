"""Writes the task store refused before writing anything, tried again for a short while.

A fault of the database that a write met before it reached it (no connection could be had:
the database restarting, stopped, or the network to it cut) wrote nothing, so the write can be
tried again without the risk of writing it twice; any other fault (a statement sent and then
timed out, or cut off mid-way) may have committed, and is never retried here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from a2a_wire.server.store import StoreUnavailableError

__all__ = ["FIRST_PAUSE_SECONDS", "MAX_PAUSE_SECONDS", "retry_unwritten"]

T = TypeVar("T")

FIRST_PAUSE_SECONDS = 0.05
"""Pause before the second try; it doubles after each try."""
MAX_PAUSE_SECONDS = 0.5
"""Longest pause between two tries."""


async def retry_unwritten(write: Callable[[], Awaitable[T]], seconds: float) -> T:
    """``await write()``, tried again while it fails with nothing written, ``seconds`` at most.

    A try is started only while its pause ends within ``seconds`` of the first one (``0``:
    tried once); each try is bounded by the store's own deadlines.

    Raises:
        StoreUnavailableError: the last try's, or the first one that may have written.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    pause = FIRST_PAUSE_SECONDS
    while True:
        try:
            return await write()
        except StoreUnavailableError as exc:
            if not exc.unwritten or loop.time() + pause > deadline:
                raise
        await asyncio.sleep(pause)
        pause = min(pause * 2, MAX_PAUSE_SECONDS)
