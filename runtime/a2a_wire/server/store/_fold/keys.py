"""How the backends key tasks: status instants, stored states and signed ListTasks cursors.

A status timestamp is kept as (seconds, nanoseconds) integers, exact at any date and small
enough for SQLite; a state as its wire value's text, so that unknown values survive.
"""

from __future__ import annotations

from a2a_wire.methods import LIST_TASKS
from a2a_wire.server.store._contract.tasks import TaskQuery
from a2a_wire.server.store._fold.paging import PageTokens, page_scope
from a2a_wire.types import Task, TaskState, Timestamp

__all__ = [
    "Instant",
    "TaskCursor",
    "issue_cursor",
    "read_cursor",
    "state_filter",
    "state_key",
    "status_key",
    "task_state",
    "timestamp_key",
]

Instant = tuple[int, int]
"""A status timestamp as (seconds, nanoseconds): the sort and filter key, exact at any date."""

TaskCursor = tuple[int, int, str]
"""Where a ListTasks page ends: the last task's status (seconds, nanoseconds) and id."""


def _query_scope(query: TaskQuery, owner: str) -> bytes:
    """What a ListTasks token is bound to besides its position: the owner and the filters."""
    after = timestamp_key(query.status_after) if query.status_after is not None else None
    return page_scope(LIST_TASKS, owner, query.context_id, state_filter(query), after)


def read_cursor(tokens: PageTokens, query: TaskQuery, owner: str) -> TaskCursor | None:
    """Where the page ``query`` asks for starts after; ``None`` for the first page.

    Raises:
        InvalidParamsError: the page token is not one ``tokens`` issued for this query.
    """
    if not query.page_token:
        return None
    seconds, nanos, task_id = tokens.read(query.page_token, _query_scope(query, owner))
    return int(seconds), int(nanos), str(task_id)


def issue_cursor(tokens: PageTokens, query: TaskQuery, owner: str, last: TaskCursor) -> str:
    """The ``next_page_token`` of a page of ``query`` that ends at ``last``."""
    return tokens.issue(last, _query_scope(query, owner))


def timestamp_key(timestamp: Timestamp) -> Instant:
    """An instant as (seconds, nanoseconds): integers that fit SQLite for years 1 to 9999."""
    return timestamp.seconds, timestamp.nanos


def status_key(task: Task) -> Instant:
    """The task's status timestamp; the epoch when it has none."""
    status = task.status
    if status is None or status.timestamp is None:
        return 0, 0
    return timestamp_key(status.timestamp)


def state_key(state: TaskState) -> str:
    """How a state is stored and filtered: its wire value as text (unknown values included)."""
    return str(state.value)


def task_state(task: Task) -> TaskState:
    """The task's state; UNSPECIFIED when it has no status."""
    return task.status.state if task.status is not None else TaskState.UNSPECIFIED


def state_filter(query: TaskQuery) -> str | None:
    """The stored state the query filters on, or ``None`` for no state filter."""
    if query.state is None or query.state == TaskState.UNSPECIFIED:
        return None
    return state_key(query.state)
