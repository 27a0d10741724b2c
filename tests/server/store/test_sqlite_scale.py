"""The SQLite store's reads that run on every sweep or delivery cost the same at any size.

Cost is counted in SQLite virtual-machine steps (``set_progress_handler``), not time: the count
of a read over a hundred times more rows must stay within 1.5x of the small one's
(benchmarks/scale_tasks.py measures the time at a million tasks).
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Callable, Iterator
from functools import partial
from typing import TypeVar

import pytest

from a2a_wire.server.store.sqlite._push import lanes_after
from a2a_wire.server.store.sqlite._rows import tasks_in_states
from a2a_wire.server.store.sqlite._schema import SCHEMA

T = TypeVar("T")

TERMINAL = [
    "TASK_STATE_CANCELED",
    "TASK_STATE_COMPLETED",
    "TASK_STATE_FAILED",
    "TASK_STATE_REJECTED",
]


def _fresh() -> sqlite3.Connection:
    """A database in memory with the store's schema."""
    db = sqlite3.connect(":memory:", isolation_level=None)
    for statement in SCHEMA:
        db.execute(statement)
    return db


@pytest.fixture
def con() -> Iterator[sqlite3.Connection]:
    db = _fresh()
    yield db
    db.close()


def steps(con: sqlite3.Connection, work: Callable[[], T]) -> tuple[int, T]:
    """The virtual-machine steps ``work`` takes on ``con``, and its result."""
    count = [0]

    def tick() -> int:
        count[0] += 1
        return 0

    con.set_progress_handler(tick, 1)
    try:
        result = work()
    finally:
        con.set_progress_handler(None, 1)
    return count[0], result


def _outbox(con: sqlite3.Connection, rows: int, lanes: int, task: str = "dead") -> None:
    con.executemany(
        "INSERT INTO push_outbox (delivery_id, task_id, config_id, body, created_at, attempts,"
        " next_attempt_at) VALUES (?, ?, 'c', x'7b7d', 0, ?, ?)",
        [(f"d{k}", f"{task}-{k % lanes}", int(k < lanes), 1e12 * (k < lanes)) for k in range(rows)],
    )


def _last_seq(con: sqlite3.Connection) -> int:
    return int(con.execute("SELECT MAX(seq) FROM push_outbox").fetchone()[0])


def _live_lanes(con: sqlite3.Connection, backlog: int) -> tuple[int, list[tuple[str, str, int]]]:
    _outbox(con, backlog, max(1, backlog // 10))
    seen = _last_seq(con)
    _outbox(con, 1, 1, task="live")
    return steps(con, lambda: lanes_after(con, seen))


def test_lanes_after_a_number_cost_the_same_behind_a_backlog_a_hundred_times_larger() -> None:
    counts = []
    for backlog in (50, 5_000):
        db = _fresh()
        count, lanes = _live_lanes(db, backlog)
        assert lanes == [("live-0", "c", backlog + 1)]  # only the lane that gained a row
        counts.append(count)
        db.close()
    small, large = counts
    assert large <= 1.5 * small, counts


def _finished(con: sqlite3.Connection, n: int) -> None:
    con.executemany(
        "INSERT INTO tasks (id, owner, context_id, state, status_s, status_ns, changed_at,"
        " first_seq, snap_seq, body) VALUES (?, '', 'ctx', ?, 0, 0, ?, 1, 1, x'7b7d')",
        [(f"t{i:06d}", TERMINAL[i % 4], 1000.0 + (i // 3)) for i in range(n)],
    )


def test_expired_tasks_come_oldest_first_across_states_then_by_id(con: sqlite3.Connection) -> None:
    _finished(con, 40)
    found = tasks_in_states(con, TERMINAL, before=1005.0, limit=7)
    # Tasks changed at 1000.0 (t0-t2), 1001.0 (t3-t5), ... ordered by time, ties by id.
    assert found == [f"t{i:06d}" for i in range(7)]
    assert tasks_in_states(con, TERMINAL, before=1001.0, limit=10) == [
        "t000000",
        "t000001",
        "t000002",
    ]
    assert tasks_in_states(con, TERMINAL[:1], limit=3) == ["t000000", "t000004", "t000008"]
    assert len(tasks_in_states(con, TERMINAL, before=math.inf)) == 40  # no limit


def test_a_batch_of_expired_tasks_costs_the_same_among_a_hundred_times_more() -> None:
    counts = []
    for n in (100, 10_000):
        db = _fresh()
        _finished(db, n)
        count, found = steps(db, partial(tasks_in_states, db, TERMINAL, before=1e9, limit=20))
        assert found == [f"t{i:06d}" for i in range(20)]
        counts.append(count)
        db.close()
    small, large = counts
    assert large <= 1.5 * small, counts
