"""The server's history rule: what a request may ask for, what a task keeps, what an answer shows.

:func:`requested_length`, :func:`trim` and :func:`view` make these decisions here and nowhere
else (spec 3.2.4, 13.4). A view shares messages and artifacts with the stored task, which stays
safe only because nothing mutates them in place: treat a view as read-only.
"""

from __future__ import annotations

from a2a_wire._protocol.tasks import with_history, without_artifacts
from a2a_wire.errors import InvalidParamsError
from a2a_wire.types import Task

__all__ = ["DEFAULT_HISTORY_LIMIT", "requested_length", "trim", "view"]

DEFAULT_HISTORY_LIMIT = 1000
"""Most messages a stored task keeps unless told otherwise (``max_history_per_task``)."""


def requested_length(value: int | None, field: str = "historyLength") -> int | None:
    """A request's ``historyLength``, checked.

    Args:
        value: The decoded field; ``None`` when absent.
        field: Its path in the request, named in the error.

    Returns:
        ``value``: ``None`` for the whole history, else the number of most recent messages.

    Raises:
        InvalidParamsError: ``value`` is negative.
    """
    if value is not None and value < 0:
        raise InvalidParamsError(
            f"{field} must not be negative", violations=[(field, "must be zero or more")]
        )
    return value


def trim(task: Task, limit: int | None) -> None:
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


def view(task: Task, length: int | None = None, *, artifacts: bool = True) -> Task:
    """The snapshot of ``task`` an answer shows.

    Args:
        task: The stored task.
        length: A :func:`requested_length`: ``None`` keeps every message, ``n`` the ``n`` most
            recent.
        artifacts: Whether the artifacts are shown (ListTasks' ``includeArtifacts``).

    Returns:
        A read-only shallow copy (see the module docstring).
    """
    shown = with_history(task, length)
    return shown if artifacts else without_artifacts(shown)
