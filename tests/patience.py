"""Waiting for a condition in a test, never for a time (the machine may be busy).

A test that needs something to have happened polls for it with :func:`poll`; only a failing
test ever reaches :data:`PATIENCE`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")

#: Seconds a test waits for a condition: far longer than anything takes on a busy machine.
PATIENCE = 60.0


async def poll(
    fetch: Callable[[], Awaitable[T]], accept: Callable[[T], bool], pause: float = 0.01
) -> T:
    """Call ``fetch`` until ``accept`` takes its value, and return it (fails after PATIENCE s)."""
    async with asyncio.timeout(PATIENCE):
        while not accept(value := await fetch()):
            await asyncio.sleep(pause)
    return value
