"""The in-memory :class:`~a2a_wire.server.store._base.TaskStore`, for tests and small deployments.

It keeps every rule of :mod:`a2a_wire.server.store._base`; the push part comes from
:class:`~a2a_wire.server.store._push.InMemoryPushStore`.
"""

from __future__ import annotations

import bisect
import builtins
from collections.abc import Sequence
from dataclasses import dataclass

from a2a_wire import codec
from a2a_wire.errors import TaskNotFoundError
from a2a_wire.server.store._base import (
    RECOVERED_STATES,
    Instant,
    TaskPage,
    TaskQuery,
    TaskStore,
    fail_after_restart,
    issue_cursor,
    now_timestamp,
    read_cursor,
    state_filter,
    state_key,
    status_key,
    task_state,
    timestamp_key,
)
from a2a_wire.server.store._paging import PageTokens, check_page_size
from a2a_wire.server.store._push import InMemoryPushStore, status_event
from a2a_wire.types import Task, TaskPushNotificationConfig

__all__ = ["InMemoryTaskStore"]


def _order(match: tuple[int, int, str, _Row]) -> tuple[int, int, str]:
    return match[0], match[1], match[2]


@dataclass(slots=True)
class _Row:
    owner: str
    context_id: str
    state: str
    status: Instant
    body: bytes


class InMemoryTaskStore(InMemoryPushStore, TaskStore):
    """A :class:`TaskStore` in process memory, holding each task as its encoded JSON.

    Data survives ``close`` and a later ``open`` of the same instance (which runs recovery), but
    not the process. Listing sorts all of an owner's matching tasks, which suits tests and
    small deployments.

    Args:
        page_token_key: HMAC key for page tokens; random when ``None`` (see
            :class:`~a2a_wire.server.store._paging.PageTokens`).
    """

    def __init__(self, *, page_token_key: bytes | None = None) -> None:
        self._rows: dict[str, _Row] = {}
        self.page_tokens = PageTokens(page_token_key)
        self._open = False
        self._init_push()

    def _require_open(self) -> None:
        if not self._open:
            raise RuntimeError("the task store is not open; call open() first")

    async def open(self) -> builtins.list[str]:
        """Mark the store open and fail the tasks a restart interrupted.

        Returns:
            Ids of the tasks moved to FAILED.

        Raises:
            RuntimeError: the store is already open (recovery would fail its live tasks).
        """
        if self._open:
            raise RuntimeError("the task store is already open")
        failed: builtins.list[str] = []
        now = now_timestamp()
        recovered = {state_key(s) for s in RECOVERED_STATES}
        for task_id, row in self._rows.items():
            if row.state in recovered:
                task = codec.decode(Task, row.body)
                fail_after_restart(task, now)
                self._rows[task_id] = self._row(task, row.owner)
                self._enqueue_push(task_id, status_event(task))
                failed.append(task_id)
        self._open = True
        return failed

    async def close(self) -> None:
        """Mark the store closed; the tasks stay for the next ``open``."""
        self._open = False

    @staticmethod
    def _row(task: Task, owner: str) -> _Row:
        body = codec.encode(task)
        return _Row(owner, task.context_id, state_key(task_state(task)), status_key(task), body)

    async def create(
        self,
        task: Task,
        *,
        owner: str = "",
        push_configs: Sequence[TaskPushNotificationConfig] = (),
        push: bytes | None = None,
    ) -> int:
        """Store a new task, its push configs and its outbox rows in one step.

        Returns:
            The number of outbox rows added.

        Raises:
            ValueError: the task has no id, or a task with that id exists.
        """
        self._require_open()
        if not task.id:
            raise ValueError("a task needs an id to be stored")
        if task.id in self._rows:
            raise ValueError(f"task {task.id!r} is already stored")
        self._rows[task.id] = self._row(task, owner)
        self._put_configs(push_configs)
        return self._enqueue_push(task.id, push)

    async def update(self, task: Task, *, push: bytes | None = None) -> int:
        """Replace a stored task, keeping its owner, and add its outbox rows in one step.

        Returns:
            The number of outbox rows added.

        Raises:
            TaskNotFoundError: no task with that id is stored.
        """
        self._require_open()
        row = self._rows.get(task.id)
        if row is None:
            raise TaskNotFoundError(metadata={"taskId": task.id})
        self._rows[task.id] = self._row(task, row.owner)
        return self._enqueue_push(task.id, push)

    async def get(self, task_id: str, *, owner: str = "") -> Task | None:
        """A fresh copy of ``owner``'s task ``task_id``, or ``None``."""
        self._require_open()
        row = self._rows.get(task_id)
        if row is None or row.owner != owner:
            return None
        return codec.decode(Task, row.body)

    async def list(self, query: TaskQuery, *, owner: str = "") -> TaskPage:
        """One page of ``owner``'s tasks matching ``query``, newest status first.

        Raises:
            InvalidParamsError: the page token is not valid for this query.
        """
        self._require_open()
        check_page_size(query.page_size)
        after = read_cursor(self.page_tokens, query, owner)
        state = state_filter(query)
        since = timestamp_key(query.status_after) if query.status_after is not None else None
        matches = sorted(
            (
                (-row.status[0], -row.status[1], task_id, row)
                for task_id, row in self._rows.items()
                if row.owner == owner
                and (not query.context_id or row.context_id == query.context_id)
                and (state is None or row.state == state)
                and (since is None or row.status >= since)
            ),
            key=_order,
        )
        start = 0
        if after is not None:
            start = bisect.bisect_right(matches, (-after[0], -after[1], after[2]), key=_order)
        page = matches[start : start + query.page_size]
        token = ""
        if start + query.page_size < len(matches):
            seconds, nanos, last_id, _ = page[-1]
            token = issue_cursor(self.page_tokens, query, owner, (-seconds, -nanos, last_id))
        tasks = [codec.decode(Task, m[3].body) for m in page]
        return TaskPage(tasks=tasks, next_page_token=token, total_size=len(matches))
