"""The server's history rule: what a request may ask for, what a task keeps, what an answer shows.

Three decisions, each made here and nowhere else (spec 3.2.4, 13.4):

* :func:`requested_length` validates a request's ``historyLength`` (GetTask, ListTasks, and
  SendMessage's ``configuration.historyLength``): absent means the whole history, a negative
  value is -32602 on that field.
* :func:`trim` bounds what a stored task keeps, applied by the store as it folds (its
  ``history_limit``; the stores that ``create_app`` and ``a2a-wire serve`` make take
  ``ServerSettings.max_history_per_task``): beyond the limit the oldest messages go, except the first one, the message that started the task (it
  names what was asked, and the skill router reads it, see :mod:`a2a_wire.server._skills`).
* :func:`view` is the task as an answer shows it: a snapshot with the history cut to the
  requested length (and without artifacts where ListTasks asks so, spec 3.1.4). The agent's
  :class:`~a2a_wire.server._executor.RequestContext` gets the full :func:`view`.

A view is a shallow copy (:func:`a2a_wire._protocol.tasks.with_history`): it shares messages and
artifacts with the stored task, which :func:`~a2a_wire._protocol.tasks.apply` and :func:`trim`
never mutate (they swap in new lists), so it stays a faithful snapshot after the hub's lock is
released and may be encoded later. Treat it as read-only.
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
