"""Row-level reads and purges of the PostgreSQL event log store (:mod:`._store`).

Each function takes the store's pool (or a connection) and its :class:`~._statements.Statements`.
A task is read by one statement, the snapshot row ``UNION ALL`` its tail, which PostgreSQL runs
on one snapshot of the database, so a fold or compaction committed meanwhile cannot tear it;
the tail is folded in Python (:func:`~a2a_wire.server.store._fold.events.fold`), as the SQLite store does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from a2a_wire import codec
from a2a_wire.server.store._contract.log import EventKind, EventRange, LogEvent
from a2a_wire.server.store._contract.tasks import TaskQuery
from a2a_wire.server.store._fold.keys import TaskCursor, state_filter, timestamp_key
from a2a_wire.server.store._fold.reads import TaskRead, read_folded
from a2a_wire.server.store.postgresql._statements import Statements
from a2a_wire.types import Task, TaskState

if TYPE_CHECKING:
    from a2a_wire.server.store.postgresql._connection import Conn, GuardedPool, Queryable

__all__ = ["Head", "list_page", "load_head", "purge_rows", "read_range", "read_task"]


@dataclass(slots=True)
class Head:
    """What a store remembers of a task it wrote to; another process may have moved on since.

    Attributes:
        owner: The owner.
        context_id: The context.
        state: The state after :attr:`seq`.
        seq: The last number this store knows to be committed.
    """

    owner: str
    context_id: str
    state: TaskState
    seq: int


async def load_head(conn: Queryable, statement: str, task_id: str) -> Head | None:
    """The task's head row by ``statement`` (``Statements.lock_head``, in a transaction)."""
    row = await conn.fetchrow(statement, task_id)
    if row is None:
        return None
    owner, context_id, state, last_seq = row
    return Head(owner, context_id, TaskState(state), last_seq)


async def read_task(
    pool: GuardedPool, sql: Statements, task_id: str, owner: str, history_limit: int | None
) -> TaskRead | None:
    """``owner``'s task, from one statement reading the snapshot and its tail."""
    return read_folded(await pool.fetch(sql.read, task_id, owner), history_limit)


def _filters(query: TaskQuery, owner: str) -> tuple[str, list[Any]]:
    """The WHERE clause and its parameters for the query's owner and filters."""
    where = " WHERE t.owner = $1 AND NOT t.deleted"
    params: list[Any] = [owner]
    if query.context_id:
        params.append(query.context_id)
        where += f" AND t.context_id = ${len(params)}"
    state = state_filter(query)
    if state is not None:
        params.append(state)
        where += f" AND t.state = ${len(params)}"
    if query.status_after is not None:
        params += timestamp_key(query.status_after)
        where += f" AND (t.status_s, t.status_ns) >= (${len(params) - 1}, ${len(params)})"
    return where, params


def _after(cursor: TaskCursor, first: int) -> tuple[str, list[Any]]:
    """The terms and parameters (numbered from ``first``) for the rows after a page's end."""
    s, ns, after = f"${first}", f"${first + 1}", f"${first + 2}"
    terms = (
        f" AND (t.status_s, t.status_ns) <= ({s}, {ns}) AND ((t.status_s, t.status_ns) < ({s}, {ns})"
        f" OR ((t.status_s, t.status_ns) = ({s}, {ns}) AND t.id > {after}))"
    )
    return terms, list(cursor)


async def list_page(
    pool: GuardedPool,
    sql: Statements,
    query: TaskQuery,
    owner: str,
    after: TaskCursor | None,
    history_limit: int | None,
) -> tuple[list[Task], TaskCursor | None, int]:
    """One ListTasks page: the tasks, the position of the last one if more follow, the count."""
    where, params = _filters(query, owner)
    count = await pool.fetchval(sql.count + where, *params)
    if after is not None:
        terms, values = _after(after, len(params) + 1)
        where, params = where + terms, params + values
    params.append(query.page_size + 1)
    order = f" ORDER BY t.status_s DESC, t.status_ns DESC, t.id LIMIT ${len(params)}"
    rows = await pool.fetch(sql.list + where + order, *params)
    page = rows[: query.page_size]
    last = (page[-1][0], page[-1][1], page[-1][2]) if len(rows) > query.page_size else None
    tasks: list[Task] = []
    for _, _, task_id, snap_seq, body, head in page:
        read = (
            await read_task(pool, sql, task_id, owner, history_limit) if head > snap_seq else None
        )
        tasks.append(read.task if read is not None else codec.decode(Task, body))
    return tasks, last, int(count)


async def read_range(
    pool: GuardedPool, sql: Statements, task_id: str, owner: str, after_seq: int, limit: int
) -> EventRange | None:
    """Up to ``limit`` of ``owner``'s task's events above ``after_seq``; ``None``: no task.

    One statement returns the task's bounds with the events (or once, with no event).
    """
    rows = await pool.fetch(sql.events, task_id, owner, after_seq, limit)
    if not rows:
        return None
    first_seq, last_seq = rows[0][0], rows[0][1]
    if rows[0][2] is None:
        return EventRange([], from_snapshot=after_seq + 1 < first_seq or after_seq > last_seq)
    if rows[0][2] != after_seq + 1:  # compacted past it
        return EventRange([], from_snapshot=True)
    return EventRange([LogEvent(seq, EventKind(kind), body) for _, _, seq, kind, body in rows])


async def purge_rows(conn: Conn, schema: str, batch: int) -> int:
    """Delete up to ``batch`` rows (events, then outbox rows) of one deleted task; in a transaction.

    The deleted task's row is locked with ``SKIP LOCKED``, so purges running in several
    processes work on different tasks.

    Returns:
        Rows deleted, counting the task's own row when it is done; 0 when no deleted task is left.
    """
    task_id = await conn.fetchval(
        f"SELECT id FROM {schema}.tasks WHERE deleted LIMIT 1 FOR UPDATE SKIP LOCKED"
    )
    if task_id is None:
        return 0
    done = len(
        await conn.fetch(
            f"DELETE FROM {schema}.task_events WHERE task_id = $1 AND seq IN (SELECT seq FROM"
            f" {schema}.task_events WHERE task_id = $1 ORDER BY seq LIMIT $2) RETURNING 1",
            task_id,
            batch,
        )
    )
    if done < batch:
        rows = await conn.fetch(
            f"DELETE FROM {schema}.push_outbox WHERE seq IN (SELECT seq FROM {schema}.push_outbox"
            " WHERE task_id = $1 ORDER BY seq LIMIT $2) RETURNING 1",
            task_id,
            batch - done,
        )
        done += len(rows)
    if done < batch:
        await conn.execute(f"DELETE FROM {schema}.tasks WHERE id = $1 AND deleted", task_id)
        done += 1
    return done
