"""Row-level reads and writes of the SQLite task store (:mod:`._store`).

Each function is plain code on the ``sqlite3`` connection, run on the store's thread inside one
:func:`~a2a_wire.server.store.sqlite._connection.hop`; the ones that write several statements run
inside the caller's :func:`~a2a_wire.server.store.sqlite._connection.transaction`.

Reads
-----
A task is read by one statement, the snapshot row ``UNION ALL`` its tail, so a fold or a
compaction between two statements cannot tear it; the tail is folded in Python. ListTasks reads
a page of listing rows with their snapshots in one statement and the tails of the (active)
tasks that have one.
"""

from __future__ import annotations

import math
import sqlite3
from dataclasses import dataclass
from typing import Any

from a2a_wire import codec
from a2a_wire.server.store._contract.log import EventKind, EventRange, LogEvent
from a2a_wire.server.store._contract.tasks import TaskQuery
from a2a_wire.server.store._fold.events import Shadow, fold
from a2a_wire.server.store._fold.reads import TaskRead, read_folded
from a2a_wire.server.store.sqlite._schema import (
    BOUNDS,
    EVENTS,
    FOLD,
    HEAD,
    LIST,
    ORDER,
    READ,
    after_cursor,
    filters,
)
from a2a_wire.types import Task, TaskState

__all__ = [
    "Folded",
    "Head",
    "Known",
    "delete_rows",
    "drop_events",
    "fold_known",
    "fold_task",
    "list_page",
    "load_head",
    "purge_rows",
    "read_range",
    "read_task",
    "tasks_in_states",
]


def _all(db: sqlite3.Connection, sql: str, params: Any = ()) -> list[Any]:
    return db.execute(sql, params).fetchall()


@dataclass(slots=True)
class Head:
    """What the store remembers of a task in use (see "Writes" in :mod:`._store`).

    Attributes:
        owner: The owner.
        context_id: The context.
        state: The state after the last committed (or reserved) event.
        seq: The last number reserved by an append.
        committed: The last number committed.
        snap_seq: The stored snapshot's number.
        snap_bytes: The stored snapshot's size.
        tail_bytes: Bytes of the events after the snapshot.
        body: The stored snapshot's JSON while it and :attr:`tail` are small, so that reading
            a task at rest right after its write needs no query.
        tail: The events reserved after the snapshot, while ``body`` is known, so that a fold
            (:func:`fold_known`) needs no read either.
        shadow: The snapshot and tail decoded (:class:`~a2a_wire.server.store._fold.events.Shadow`), from the task's
            creation until the first fold takes it, so that the fold needs no decoding either.
    """

    owner: str
    context_id: str
    state: TaskState
    seq: int
    committed: int
    snap_seq: int
    snap_bytes: int
    tail_bytes: int
    body: bytes | None = None
    tail: list[LogEvent] | None = None
    shadow: Shadow | None = None

    def reserve(self, logged: list[LogEvent], limit: int) -> Known | None:
        """Add reserved events to the tail; forget both past ``limit`` bytes; what is known."""
        tail = [*self.tail, *logged] if self.tail is not None else []  # new list, see Known
        size = sum(len(e.body) for e in tail) + len(self.body or b"")
        if self.body is None or self.tail is None or size > limit:
            self.body = self.tail = self.shadow = None
            return None
        self.tail = tail
        return self.snap_seq, self.body, tail


Known = tuple[int, bytes, list[LogEvent]]
"""A snapshot's number, JSON and tail, as the file has them when the hop of the last one runs."""


def load_head(db: sqlite3.Connection, task_id: str) -> Head | None:
    """The head of a task as the file has it, by one statement; ``None``: no such task."""
    found = list(_all(db, HEAD, (task_id,)))
    if not found:
        return None
    owner, context_id, state, snap_seq, snap_bytes, last, tail = found[0]
    return Head(owner, context_id, TaskState(state), last, last, snap_seq, snap_bytes, tail)


def read_task(
    db: sqlite3.Connection, task_id: str, owner: str, history_limit: int | None
) -> TaskRead | None:
    """``owner``'s task, from one statement reading the snapshot and its tail."""
    return read_folded(list(_all(db, READ, (task_id, owner))), history_limit)


@dataclass(frozen=True, slots=True)
class Folded:
    """A snapshot written by a fold.

    Attributes:
        seq: Its number.
        body: Its JSON.
        absorbed: Bytes of the tail it took in.
        task: The folded task, decoded for the fold (a fresh copy; the store keeps only ``body``).
    """

    seq: int
    body: bytes
    absorbed: int
    task: Task


def fold_task(
    db: sqlite3.Connection, task_id: str, owner: str, history_limit: int | None
) -> Folded | None:
    """Write the folded snapshot back, unless another fold got there first (``None`` then)."""
    read = read_task(db, task_id, owner, history_limit)
    if read is None or read.seq == read.base_seq:
        return None
    body = codec.encode(read.task)
    if not db.execute(FOLD, (read.seq, body, task_id, read.base_seq)).rowcount:
        return None
    return Folded(read.seq, body, read.tail_bytes, read.task)


def fold_known(
    db: sqlite3.Connection,
    task_id: str,
    known: Known,
    limit: int | None,
    shadow: Shadow | None = None,
) -> Folded | None:
    """:func:`fold_task` from a snapshot and tail known already: one UPDATE, no read.

    With the ``shadow`` of that snapshot and tail, nothing is decoded either (it is used up).
    """
    snap_seq, snapshot, tail = known
    if not tail:
        return None
    if shadow is not None:
        task = shadow.fold(limit)
    else:
        task = fold(codec.decode(Task, snapshot), tail, limit)
    body = codec.encode(task)
    if not db.execute(FOLD, (tail[-1].seq, body, task_id, snap_seq)).rowcount:
        return None
    return Folded(tail[-1].seq, body, sum(len(event.body) for event in tail), task)


def list_page(
    db: sqlite3.Connection,
    query: TaskQuery,
    owner: str,
    after: tuple[int, int, str] | None,
    history_limit: int | None,
) -> tuple[list[Task], tuple[int, int, str] | None, int]:
    """One ListTasks page: the tasks, the position of the last one if more follow, the count."""
    where, params = filters(query, owner)
    count = list(_all(db, f"SELECT COUNT(*) FROM tasks{where}", params))
    if after is not None:
        terms, values = after_cursor(after)
        where, params = where + terms, params + values
    rows = list(_all(db, LIST + where + ORDER, [*params, query.page_size + 1]))
    page = rows[: query.page_size]
    last = (page[-1][0], page[-1][1], page[-1][2]) if len(rows) > query.page_size else None
    tasks: list[Task] = []
    for _, _, task_id, snap_seq, body, head in page:
        read = read_task(db, task_id, owner, history_limit) if head > snap_seq else None
        tasks.append(read.task if read is not None else codec.decode(Task, body))
    return tasks, last, count[0][0]


def read_range(
    db: sqlite3.Connection, task_id: str, owner: str, after_seq: int, limit: int
) -> EventRange | None:
    """Up to ``limit`` of ``owner``'s task's events above ``after_seq``; ``None``: no task."""
    rows: list[Any] = list(_all(db, EVENTS, (task_id, owner, after_seq, limit)))
    if rows:
        if rows[0][0] != after_seq + 1:  # compacted since
            return EventRange([], from_snapshot=True)
        return EventRange([LogEvent(seq, EventKind(k), bytes(b)) for seq, k, b in rows])
    bounds = list(_all(db, BOUNDS, (task_id, owner)))
    if not bounds:
        return None
    first_seq, last = bounds[0]
    return EventRange([], from_snapshot=after_seq + 1 < first_seq or after_seq > last)


def drop_events(db: sqlite3.Connection, task_id: str, through: int, batch: int) -> int:
    """Delete up to ``batch`` of the task's oldest events, none above ``through``; in a transaction.

    Returns:
        The number of events deleted.
    """
    sql = "SELECT ref, first_seq FROM tasks WHERE id = ?"
    rows = list(_all(db, sql, (task_id,)))
    if not rows:
        return 0
    ref, first_seq = rows[0]
    upto = min(through, first_seq + batch - 1)
    sql = "DELETE FROM task_events WHERE task_ref = ? AND seq <= ? RETURNING 1"
    dropped = len(list(_all(db, sql, (ref, upto))))
    if dropped:
        sql = "UPDATE tasks SET first_seq = ? WHERE id = ?"
        _all(db, sql, (upto + 1, task_id))
    return dropped


def tasks_in_states(
    db: sqlite3.Connection,
    states: list[str],
    *,
    before: float = math.inf,
    limit: int = -1,
    logged: bool = False,
) -> list[str]:
    """Ids of tasks in ``states`` (stored values) whose state changed before ``before``.

    Args:
        db: The connection.
        states: Stored state values.
        before: A time of the store's clock; all times when omitted.
        limit: Most ids, oldest change first; no limit when negative.
        logged: Only tasks that still have events.
    """
    if not states:
        return []
    # One index walk per state, each stopping at ``limit``, merged: an IN over the states would
    # sort every match (all the finished tasks) before the limit, on each call of a sweep.
    one = "SELECT id, changed_at FROM tasks WHERE state = ? AND changed_at < ?"
    if logged:
        one += " AND EXISTS (SELECT 1 FROM task_events WHERE task_ref = tasks.ref)"
    one = f"SELECT * FROM ({one} ORDER BY changed_at, id LIMIT ?)"
    sql = " UNION ALL ".join([one] * len(states)) + " ORDER BY 2, 1 LIMIT ?"
    params = [value for state in states for value in (state, before, limit)]
    return [row[0] for row in _all(db, sql, [*params, limit])]


def delete_rows(db: sqlite3.Connection, task_id: str) -> bool:
    """Delete a task's row (with its snapshot) and configs, and queue the rest; in a transaction.

    Returns:
        Whether the task existed.
    """
    gone = list(_all(db, "DELETE FROM tasks WHERE id = ? RETURNING ref", (task_id,)))
    if not gone:
        return False
    _all(db, "DELETE FROM push_configs WHERE task_id = ?", (task_id,))
    sql = "INSERT OR IGNORE INTO deleted_tasks (task_id, ref) VALUES (?, ?)"
    _all(db, sql, (task_id, gone[0][0]))
    return True


def purge_rows(db: sqlite3.Connection, batch: int) -> int:
    """Delete up to ``batch`` rows (events, then outbox rows) of one deleted task; in a transaction.

    Returns:
        Rows deleted, counting the task's ``deleted_tasks`` entry when it is done; 0 when no
        deleted task is left.
    """
    rows = list(_all(db, "SELECT task_id, ref FROM deleted_tasks LIMIT 1"))
    if not rows:
        return 0
    task_id, ref = rows[0]
    sql = (
        "DELETE FROM task_events WHERE task_ref = ?1 AND seq IN"
        " (SELECT seq FROM task_events WHERE task_ref = ?1 ORDER BY seq LIMIT ?2) RETURNING 1"
    )
    done = len(list(_all(db, sql, (ref, batch))))
    if done < batch:
        sql = (
            "DELETE FROM push_outbox WHERE seq IN"
            " (SELECT seq FROM push_outbox WHERE task_id = ?1 LIMIT ?2) RETURNING 1"
        )
        done += len(list(_all(db, sql, (task_id, batch - done))))
    if done < batch:
        _all(db, "DELETE FROM deleted_tasks WHERE task_id = ?", (task_id,))
        done += 1
    return done
