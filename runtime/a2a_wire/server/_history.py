"""The server's history rule: what a request may ask for, what a task keeps, what an answer shows.

:func:`requested_length` and :func:`view` make the request's and the answer's decisions here and
nowhere else (spec 3.2.4, 13.4); what a stored task keeps is the store's rule,
:func:`~a2a_wire.server.store.trim_history`, re-exported here. A view shares messages and artifacts with the stored task, which stays
safe only because nothing mutates them in place: treat a view as read-only.
"""

from __future__ import annotations

from a2a_wire._protocol.tasks import with_history, without_artifacts
from a2a_wire.errors import InvalidParamsError
from a2a_wire.server.store import DEFAULT_HISTORY_LIMIT, trim_history
from a2a_wire.types import Task

__all__ = ["DEFAULT_HISTORY_LIMIT", "requested_length", "trim_history", "view"]


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
