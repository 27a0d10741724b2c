"""What the backends' reads share: a task read with its tail, paging, range checks, outbox rows.

Each backend finds the rows its own way; the page tokens, the fold of a read and the argument
rules of ``read_events`` are the same for all, so they are written once, here.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from a2a_wire import codec
from a2a_wire.server.store._contract.log import EventKind, LogEvent
from a2a_wire.server.store._contract.push import Delivery
from a2a_wire.server.store._contract.tasks import TaskPage, TaskQuery
from a2a_wire.server.store._fold.events import fold
from a2a_wire.server.store._fold.keys import TaskCursor, issue_cursor, read_cursor
from a2a_wire.server.store._fold.paging import PageTokens, check_page_size
from a2a_wire.types import Task, TaskPushNotificationConfig

__all__ = ["Found", "TaskRead", "check_range", "delivery_of", "list_page", "read_folded"]


@dataclass(frozen=True, slots=True)
class TaskRead:
    """A task read with its tail folded in.

    Attributes:
        task: The task, a fresh copy.
        seq: The last event folded in.
        base_seq: The stored snapshot's number.
        tail_bytes: Bytes of the tail events that were folded.
    """

    task: Task
    seq: int
    base_seq: int
    tail_bytes: int


def read_folded(rows: Sequence[Sequence[Any]], history_limit: int | None) -> TaskRead | None:
    """The task the rows of one read give, or ``None`` when they hold no snapshot.

    Args:
        rows: ``(snapshot number, 0, snapshot JSON)`` first, then ``(seq, kind, body)`` of each
            tail event in order: the shape of both SQL backends' task read.
        history_limit: Most messages the folded task keeps.
    """
    if not rows or rows[0][1] != 0:
        return None
    base_seq, _, body = rows[0]
    tail = [LogEvent(seq, EventKind(kind), bytes(data)) for seq, kind, data in rows[1:]]
    task = fold(codec.decode(Task, body), tail, history_limit)
    seq = tail[-1].seq if tail else base_seq
    return TaskRead(task, seq, base_seq, sum(len(event.body) for event in tail))


Found = tuple[list[Task], TaskCursor | None, int]
"""A backend's answer to a page: the tasks, the last one's cursor if more follow, the total."""


async def list_page(
    tokens: PageTokens,
    query: TaskQuery,
    owner: str,
    find: Callable[[TaskCursor | None], Awaitable[Found]],
) -> TaskPage:
    """One ListTasks page: check the size and token, let ``find`` read after the cursor.

    Raises:
        InvalidParamsError: the page token is not valid for this query.
        ValueError: the page size is out of range (the handler's check was skipped).
    """
    check_page_size(query.page_size)
    tasks, last, count = await find(read_cursor(tokens, query, owner))
    token = issue_cursor(tokens, query, owner, last) if last is not None else ""
    return TaskPage(tasks=tasks, next_page_token=token, total_size=count)


def check_range(after_seq: int, limit: int) -> None:
    """The arguments of ``read_events``.

    Raises:
        ValueError: ``after_seq`` is negative or ``limit`` below 1.
    """
    if after_seq < 0 or limit < 1:
        raise ValueError("after_seq must be at least 0 and limit at least 1")


def delivery_of(row: Sequence[Any]) -> Delivery:
    """An outbox row read by both SQL backends' delivery queries.

    Args:
        row: ``(seq, delivery_id, body, created_at, attempts, next_attempt_at, last_error,
            failed, config JSON)``.
    """
    seq, delivery_id, body, created, attempts, next_at, error, failed, config = row
    return Delivery(
        seq=seq,
        delivery_id=delivery_id,
        config=codec.decode(TaskPushNotificationConfig, config),
        body=bytes(body),
        created_at=created,
        attempts=attempts,
        next_attempt_at=next_at,
        last_error=error,
        failed=bool(failed),
    )
