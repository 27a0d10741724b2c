"""Waiting for a task by polling GetTask (:meth:`A2AClient.wait <a2a_wire.client.A2AClient.wait>`)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from a2a_wire._protocol.states import is_settled
from a2a_wire.client._errors import WaitTimeoutError
from a2a_wire.types import Task, TaskState

__all__ = ["poll_until_settled"]


async def poll_until_settled(
    get_task: Callable[[], Awaitable[Task]],
    task_id: str,
    pauses: tuple[float, float, float],
    timeout: float | None,
) -> Task:
    """Call ``get_task`` until the task is terminal or interrupted (an unknown state is not).

    Args:
        get_task: One GetTask of the task.
        task_id: Its id, for the error.
        pauses: (first pause, longest pause, factor applied after each poll), in seconds.
        timeout: Give up after this many seconds (``None``: never).

    Returns:
        The settled task.

    Raises:
        WaitTimeoutError: ``timeout`` passed first.
    """
    delay, longest, backoff = pauses
    last: TaskState | None = None
    try:
        async with asyncio.timeout(timeout):
            while True:
                task = await get_task()
                last = task.status.state if task.status is not None else None
                if last is not None and is_settled(last):
                    return task
                await asyncio.sleep(delay)
                delay = min(delay * backoff, longest)
    except TimeoutError as exc:
        raise WaitTimeoutError(task_id, last, timeout or 0.0) from exc
