"""What a ListTasks query asks and a page answers, and the recovery rule every store applies.

Every store keeps the same rules (no aliasing, owner scoping, order, filters, signed cursors,
recovery on open), listed in docs/internals/store.md, "Rules every store keeps"; the suites of
``tests/server/store/`` run them against each backend.
"""

from __future__ import annotations

from dataclasses import dataclass

from a2a_wire.server.store._fold.paging import DEFAULT_PAGE_SIZE
from a2a_wire.types import Task, TaskState, Timestamp

__all__ = ["RECOVERED_STATES", "RESTART_MESSAGE", "TaskPage", "TaskQuery"]

RESTART_MESSAGE = (
    "The server restarted while this task was in progress, so its work was lost. "
    "Send the request again to start a new task."
)
"""Text of the agent status message put on tasks failed by recovery."""

RECOVERED_STATES: frozenset[TaskState] = frozenset({TaskState.SUBMITTED, TaskState.WORKING})
"""States whose tasks ``open`` fails: their executor died with the previous process."""


@dataclass(frozen=True)
class TaskQuery:
    """What ListTasks asks for (spec 3.1.4), already validated by the handler.

    Attributes:
        context_id: Only tasks of this context; ``""`` for all.
        state: Only tasks in this state; ``None`` (or UNSPECIFIED) for all.
        status_after: Only tasks whose status timestamp is at or after this instant.
        page_size: Tasks per page, 1 to :data:`~a2a_wire.server.store._fold.paging.MAX_PAGE_SIZE`.
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
