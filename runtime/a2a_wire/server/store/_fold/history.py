"""What a stored task keeps of its history: the first message and the newest ones.

A store trims on every write, so the limit bounds what a task costs however long it runs; what an
answer shows of the kept history is the server's rule (``a2a_wire.server._history``).
"""

from __future__ import annotations

from a2a_wire.types import Task

__all__ = ["DEFAULT_HISTORY_LIMIT", "trim_history"]

DEFAULT_HISTORY_LIMIT = 1000
"""Most messages a stored task keeps unless told otherwise (``max_history_per_task``)."""


def trim_history(task: Task, limit: int | None) -> None:
    """Keep at most ``limit`` messages in ``task.history``: the first and the newest.

    The list is replaced, never mutated, so views sharing the old one stay intact.

    Args:
        task: The stored task, trimmed in place.
        limit: Most messages kept; ``None`` keeps everything. At least 1.
    """
    if limit is None or len(task.history) <= limit:
        return
    if limit == 1:
        task.history = task.history[:1]
    else:
        task.history = [task.history[0], *task.history[len(task.history) - (limit - 1) :]]
