"""Timed waits that keep a cancellation: the asyncio helpers every role uses.

On Python 3.11, :func:`asyncio.wait_for` loses a cancellation that arrives in the loop iteration
in which the awaited thing finished: it returns the result and the task goes on as if never
cancelled (CPython bpo-42130, gh-86296; 3.12 rebuilt ``wait_for`` on :func:`asyncio.timeout`).
A loop that waits that way for a wake-up (``wait_for(event.wait(), poll)``) can then outlive
the ``cancel()`` meant to stop it, and the shutdown that awaits the loop hangs: the push reader
did so when a delivery ended just as the app closed. :func:`asyncio.timeout` counts
cancellations (``Task.cancelling``), so a cancel that meets the timeout or the wake-up is kept.
"""

from __future__ import annotations

import asyncio

__all__ = ["wait_set"]


async def wait_set(event: asyncio.Event, seconds: float | None) -> bool:
    """Wait until ``event`` is set, for at most ``seconds`` (``None``: no limit).

    Returns:
        ``True`` if the event was set, ``False`` if the time ran out first.

    Raises:
        asyncio.CancelledError: the waiting task was cancelled, also in the same loop
            iteration as the event was set.
    """
    try:
        async with asyncio.timeout(seconds):
            await event.wait()
    except TimeoutError:
        return False
    return True
