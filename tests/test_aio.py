"""Timed waits keep a cancellation that meets their wake-up (runtime/a2a_wire/_aio.py).

On Python 3.11 ``asyncio.wait_for`` loses a cancel that arrives in the loop iteration in which
the awaited event was set. The push reader waited that way; an app closing just as a delivery
ended then hung in its cleanup (seen as a 120 s timeout of test_push_delivery.py on PostgreSQL
with a busy machine). The tests set the event, let the loop run a few steps, and cancel. After
one or two steps the old wait lost the cancel every time (those cases fail with it); after
three, the reader has gone back to waiting, the plain case, kept so that a stop while idle is
covered too.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection

import pytest
from push_support import local_settings

from a2a_wire._aio import wait_set
from a2a_wire.server.push._claimed import ClaimReader
from a2a_wire.server.push._sender import Sender
from a2a_wire.server.store import Delivery

DEADLINE = 30.0  # generous: a working wait ends at the next loop iteration


async def test_a_set_event_ends_the_wait_as_set() -> None:
    event = asyncio.Event()
    event.set()
    assert await wait_set(event, 5.0) is True


async def test_the_time_running_out_ends_the_wait_as_not_set() -> None:
    assert await wait_set(asyncio.Event(), 0.01) is False


async def test_a_cancel_in_the_iteration_of_the_wake_up_is_kept() -> None:
    event = asyncio.Event()
    rounds = 0

    async def loop_until_cancelled() -> None:
        nonlocal rounds
        while True:
            await wait_set(event, 3600.0)
            event.clear()
            rounds += 1

    task = asyncio.create_task(loop_until_cancelled())
    await asyncio.sleep(0)  # the loop waits
    event.set()
    await asyncio.sleep(0)  # the wake-up has run, the waiting task not yet
    task.cancel()
    done, _ = await asyncio.wait([task], timeout=DEADLINE)
    assert done == {task} and task.cancelled()
    assert rounds <= 1


class NoRows:
    """The claims of an empty shared outbox: every claim finds nothing."""

    def __init__(self) -> None:
        self.claims = 0

    async def claim_deliveries(
        self, limit: int, *, holding: Collection[int] | None = None
    ) -> list[Delivery]:
        self.claims += 1
        return []

    async def delivery_retry_in(self, seq: int, *, attempts: int, delay: float, error: str) -> None:
        raise AssertionError("nothing was claimed")

    async def release_delivery(self, seq: int) -> None:
        raise AssertionError("nothing was claimed")


@pytest.mark.parametrize("pauses", [1, 2, 3])
async def test_the_claim_reader_stops_when_cancelled_right_after_a_wake(pauses: int) -> None:
    claims = NoRows()
    sender = Sender(claims, local_settings())  # type: ignore[arg-type]  # never asked to send
    reader = ClaimReader(claims, sender, 4, poll_seconds=3600.0)
    running = asyncio.create_task(reader.run())
    while claims.claims < 1:  # the first claim (at start) is done; the reader pauses
        await asyncio.sleep(0)
    reader.wake()  # as the end of a delivery does
    for _ in range(pauses):
        await asyncio.sleep(0)
    running.cancel()
    done, _ = await asyncio.wait([running], timeout=DEADLINE)
    assert done == {running} and running.cancelled()
