"""The rules every task store keeps, the ListTasks query types and helpers the backends share.

The server keeps every task (spec 4.1.1) in an event log store (:mod:`a2a_wire.server.store._log`,
the protocol :class:`~a2a_wire.server.store._log.EventLogStore`) and answers GetTask (spec 3.1.3)
and ListTasks (spec 3.1.4) from it. The backends are :mod:`a2a_wire.server.store._log_memory`
and :mod:`a2a_wire.server.store._log_sqlite`; both keep the rules below, and the suites of
``tests/server/store/`` run against each of them.

Rules kept
----------
* **No aliasing.** A store keeps the task's JSON encoding (:func:`a2a_wire.codec.encode`), never
  the live object: ``create``/``append`` encode at once and ``get``/``list`` decode fresh copies,
  so neither the caller nor the store can change the other's data by mutating an object.
* **Owner scoping (spec 3.1.4, 13.1).** Every task is stored with the owner string the server
  derived from the caller's authentication. ``get`` and ``list`` only see the caller's own tasks;
  another owner's task looks exactly like a missing one.
* **Order (spec 3.1.4).** ``list`` sorts by status timestamp, newest first, and then by task id
  so that ties have a stable order for the cursor. Only a status change moves a task; an
  artifact-only update does not (docs/prose-and-proto.md row 12). A task without a status
  timestamp sorts as the epoch.
* **Filters.** ``context_id`` exact, ``state`` exact (``None`` or UNSPECIFIED: no filter), and
  ``status_after`` inclusive (status timestamp ``>=`` it).
* **Cursor pagination (spec 3.1.4).** A page token names the last task of the previous page
  (its status timestamp and id), signed by the store's ``page_tokens`` together
  with the owner and the filters (the scheme of :mod:`a2a_wire.server.store._paging`); a token
  that fails the check raises :class:`~a2a_wire.errors.InvalidParamsError` with a ``pageToken``
  violation. ``next_page_token`` is ``""`` on the last page and ``total_size`` counts every
  match before paging.
* **Page size.** The handler applies :func:`~a2a_wire.server.store._paging.page_size` (1 to
  100, default 50, -32602 otherwise); a store treats anything else as a bug.
* **Recovery on open.** A task left SUBMITTED or WORKING by a previous process has lost its
  executor, so ``open`` logs a FAILED status for it with an agent status message explaining
  that the server restarted (checked like any event, by :func:`a2a_wire._protocol.tasks.apply`),
  and puts that status in the push outbox for the task's webhooks. INPUT_REQUIRED and AUTH_REQUIRED tasks wait for
  the client and are kept as they are.
"""

from __future__ import annotations

from dataclasses import dataclass

from a2a_wire.methods import LIST_TASKS
from a2a_wire.server.store._paging import DEFAULT_PAGE_SIZE, PageTokens, scope
from a2a_wire.types import Task, TaskState, Timestamp

__all__ = [
    "RECOVERED_STATES",
    "RESTART_MESSAGE",
    "Instant",
    "TaskCursor",
    "TaskPage",
    "TaskQuery",
    "issue_cursor",
    "read_cursor",
    "state_filter",
    "state_key",
    "status_key",
    "task_state",
    "timestamp_key",
]

RESTART_MESSAGE = (
    "The server restarted while this task was in progress, so its work was lost. "
    "Send the request again to start a new task."
)
"""Text of the agent status message put on tasks failed by recovery."""

RECOVERED_STATES: frozenset[TaskState] = frozenset({TaskState.SUBMITTED, TaskState.WORKING})
"""States whose tasks ``open`` fails: their executor died with the previous process."""

Instant = tuple[int, int]
"""A status timestamp as (seconds, nanoseconds): the sort and filter key, exact at any date."""

TaskCursor = tuple[int, int, str]
"""Where a ListTasks page ends: the last task's status (seconds, nanoseconds) and id."""


@dataclass(frozen=True)
class TaskQuery:
    """What ListTasks asks for (spec 3.1.4), already validated by the handler.

    Attributes:
        context_id: Only tasks of this context; ``""`` for all.
        state: Only tasks in this state; ``None`` (or UNSPECIFIED) for all.
        status_after: Only tasks whose status timestamp is at or after this instant.
        page_size: Tasks per page, 1 to :data:`~a2a_wire.server.store._paging.MAX_PAGE_SIZE`.
        page_token: ``next_page_token`` of the previous page; ``""`` for the first page.
    """

    context_id: str = ""
    state: TaskState | None = None
    status_after: Timestamp | None = None
    page_size: int = DEFAULT_PAGE_SIZE
    page_token: str = ""


@dataclass(frozen=True)
class TaskPage:
    """One page of ListTasks results.

    Attributes:
        tasks: The tasks, newest status first; fresh copies owned by the caller.
        next_page_token: Token for the next page; ``""`` when this is the last page.
        total_size: Number of tasks matching the query, over all pages.
    """

    tasks: list[Task]
    next_page_token: str
    total_size: int


def _query_scope(query: TaskQuery, owner: str) -> bytes:
    """What a ListTasks token is bound to besides its position: the owner and the filters."""
    after = timestamp_key(query.status_after) if query.status_after is not None else None
    return scope(LIST_TASKS, owner, query.context_id, state_filter(query), after)


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
