"""Writes of the SQLite task store (:mod:`._store`): a batch reserved, written, settled.

An append (or a create with its first turn) is three steps. :func:`reserve`, on the event loop
before the first ``await``, numbers the checked events after the task's :class:`~._rows.Head`,
moves the head's state on and decides whether to fold; :func:`write_events` or
:func:`create_rows`, on the connection's thread inside one
:func:`~a2a_wire.server.store.sqlite._connection.hop`, writes the rows; :func:`settle`, back on the
loop after the commit, records what was committed and what the fold wrote in the head.

A create with events writes the task's row (with its snapshot) and event 1, its push configs and outbox
rows, then the batch, in one ``BEGIN IMMEDIATE`` transaction: one hop and one commit where a
create and an append took two of each.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from a2a_wire.server.store._contract.log import Appended, EventKind, LogEvent
from a2a_wire.server.store._fold.events import Prepared, Shadow, should_fold, status_instant
from a2a_wire.server.store._fold.keys import state_key
from a2a_wire.server.store.sqlite._connection import transaction
from a2a_wire.server.store.sqlite._push import enqueue, put_configs
from a2a_wire.server.store.sqlite._rows import Folded, Head, Known, fold_known, fold_task
from a2a_wire.server.store.sqlite._schema import (
    INSERT_EVENT,
    INSERT_NEW_EVENT,
    INSERT_TASK,
    UPDATE_STATUS,
)
from a2a_wire.types import TaskPushNotificationConfig, TaskState

__all__ = [
    "Batch",
    "absorb",
    "appended",
    "create_rows",
    "insert_task",
    "reserve",
    "settle",
    "write_events",
]

log = logging.getLogger("a2a_wire.server.store")


@dataclass(frozen=True, slots=True)
class Batch:
    """A checked batch of events, numbered and ready to write.

    Attributes:
        logged: The events with their numbers.
        status: The values of ``UPDATE_STATUS`` when the batch changes the status.
        pushing: Put each streamed event in the outbox.
        fold: Owner, history limit, what the head knows and its shadow (taken from the head),
            to fold in the same transaction (:func:`~._rows.fold_known`); ``None``:
            no fold.
    """

    logged: list[LogEvent]
    status: tuple[Any, ...] | None
    pushing: bool
    fold: tuple[str, int | None, Known | None, Shadow | None] | None


def reserve(
    head: Head,
    task_id: str,
    prepared: Prepared,
    *,
    pushing: bool,
    changed: float,
    history_limit: int | None,
    cache_bytes: int,
) -> Batch:
    """Number ``prepared`` after ``head`` and reserve the numbers and the new state in it.

    Args:
        head: The task's head; changed in place.
        task_id: The task.
        prepared: The checked events.
        pushing: Whether the task has push configs and push notifications are on.
        changed: The store's clock now, for the listing columns of a status change.
        history_limit: The store's history limit, for a fold.
        cache_bytes: Largest snapshot and tail the head keeps (``BODY_CACHE_BYTES``).
    """
    logged = [LogEvent(head.seq + 1 + i, k, b) for i, (k, b) in enumerate(prepared.frames)]
    status = prepared.status
    head.seq = logged[-1].seq
    head.state = status.state if status is not None else head.state
    columns = None
    if status is not None:
        columns = (state_key(status.state), *status_instant(status), changed, task_id)
    head.shadow = Shadow.after(head.shadow, prepared)
    known = head.reserve(logged, cache_bytes)
    tail = head.tail_bytes + sum(len(event.body) for event in logged)
    fold = None
    if should_fold(tail, head.snap_bytes, head.state):
        shadow, head.shadow = head.shadow, None  # the fold uses it up
        fold = (head.owner, history_limit, known, shadow)
    return Batch(logged, columns, pushing, fold)


def settle(head: Head, batch: Batch, folded: Folded | None, cache_bytes: int) -> Folded | None:
    """Record a committed batch in ``head``; what the fold wrote if it took in all of it."""
    last = batch.logged[-1].seq
    head.committed = max(head.committed, last)
    head.tail_bytes += sum(len(event.body) for event in batch.logged)
    if folded is None:
        return None
    absorb(head, folded, cache_bytes)
    return folded if folded.seq == last else None


def appended(
    logged: list[LogEvent], outbox: int, state: TaskState, whole: Folded | None
) -> Appended:
    """What a write committed, with the fold :func:`settle` gave (``None``: none)."""
    if whole is None:
        return Appended(logged, outbox, state)
    return Appended(logged, outbox, state, whole.task, whole.body)


def absorb(head: Head, folded: Folded, cache_bytes: int) -> None:
    """Record in ``head`` the snapshot a fold wrote (keeping its JSON if small and whole)."""
    head.snap_seq, head.snap_bytes = folded.seq, len(folded.body)
    head.shadow = None  # it shadowed the snapshot replaced now
    head.tail_bytes = max(0, head.tail_bytes - folded.absorbed)
    whole = head.seq == head.committed == folded.seq  # no append in flight or after
    head.body = folded.body if whole and len(folded.body) <= cache_bytes else None
    head.tail = [] if head.body is not None else None


def _write_rows(
    db: sqlite3.Connection, task_id: str, batch: Batch, *, new: tuple[int, bytes] | None = None
) -> tuple[int, Folded | None]:
    """The batch's rows; ``new``: the ``ref`` and first event of a task inserted just now.

    The events of a new task need no check, and go in one statement with event 1.
    """
    if new is not None:
        ref, first = new
        rows = [(ref, event.seq, int(event.kind), event.body) for event in batch.logged]
        db.executemany(INSERT_NEW_EVENT, [(ref, 1, int(EventKind.TASK), first), *rows])
    else:
        for event in batch.logged:
            params = (task_id, event.seq, int(event.kind), event.body)
            if not db.execute(INSERT_EVENT, params).rowcount:
                raise sqlite3.IntegrityError(f"event {event.seq} does not follow the log")
    if batch.status is not None:
        db.execute(UPDATE_STATUS, batch.status)
    outbox = 0
    if batch.pushing:
        outbox = sum(enqueue(db, task_id, e.body) for e in batch.logged if e.streamed)
    return outbox, None if batch.fold is None else _try_fold(db, task_id, *batch.fold)


def write_events(db: sqlite3.Connection, task_id: str, batch: Batch) -> tuple[int, Folded | None]:
    """Write a batch: its events, the status columns, its outbox rows, the fold asked for.

    One artifact chunk without push work is one INSERT, which commits by itself; anything else
    is one transaction. Each INSERT checks that its number follows the log's last one and that
    the task exists (``INSERT_EVENT``). A fold runs after the events are written, in the same
    transaction when there is one; a fold that fails is logged and the batch commits.

    Returns:
        The number of outbox rows added, and what the fold did.

    Raises:
        sqlite3.IntegrityError: a number does not follow the log, or the task is gone; nothing
            was written.
    """
    if len(batch.logged) == 1 and batch.status is None and not batch.pushing:
        return _write_rows(db, task_id, batch)
    return transaction(db, lambda: _write_rows(db, task_id, batch))


def _try_fold(
    db: sqlite3.Connection,
    task_id: str,
    owner: str,
    limit: int | None,
    known: Known | None,
    shadow: Shadow | None,
) -> Folded | None:
    try:
        if known is not None:
            return fold_known(db, task_id, known, limit, shadow)
        return fold_task(db, task_id, owner, limit)
    except Exception:  # the events are written: a later read or fold redoes this one
        log.exception("folding task %s failed", task_id)
        return None


def insert_task(
    db: sqlite3.Connection, row: tuple[Any, ...], snapshot: bytes, first: bytes | None
) -> int:
    """Insert a new task's row with its snapshot, and event 1 (``None``: the caller does).

    In a transaction.

    Returns:
        The task's ``ref``, the number its events are keyed by.

    Raises:
        sqlite3.IntegrityError: the id is taken, also by a deleted task not purged yet.
    """
    cursor = db.execute(INSERT_TASK, (*row, snapshot))
    if not cursor.rowcount or cursor.lastrowid is None:
        raise sqlite3.IntegrityError("the id of a deleted task")
    if first is not None:
        db.execute(INSERT_NEW_EVENT, (cursor.lastrowid, 1, int(EventKind.TASK), first))
    return cursor.lastrowid


def create_rows(
    db: sqlite3.Connection,
    row: tuple[Any, ...],
    snapshot: bytes,
    first: bytes,
    configs: Sequence[TaskPushNotificationConfig],
    push: bool,
    batch: Batch | None,
) -> tuple[int, Folded | None]:
    """Insert a new task (:func:`insert_task`), its configs, outbox rows and first batch.

    Everything in one transaction; ``row`` is the listing row, its id first.

    Returns:
        The number of outbox rows added, and what the fold of the batch did.

    Raises:
        sqlite3.IntegrityError: the id is taken; nothing was written.
    """

    def steps() -> tuple[int, Folded | None]:
        ref = insert_task(db, row, snapshot, first if batch is None else None)
        put_configs(db, configs)
        outbox = enqueue(db, row[0], first) if push else 0
        if batch is None:
            return outbox, None
        more, folded = _write_rows(db, row[0], batch, new=(ref, first))
        return outbox + more, folded

    return transaction(db, steps)
