"""Bulk loading for benchmarks/scale_tasks.py: many finished tasks, and an outbox backlog.

The rows are the stores' own: a *template* task is written through the store API (created,
then working, an artifact, completed: four events, folded at the end), read back from the file
or schema, and cloned with bulk SQL (``executemany`` in SQLite, ``COPY`` in PostgreSQL), each
clone with its own id, context (:data:`PER_CONTEXT` tasks each), status time and state-change
time, replaced in every body. Ids and contexts are functions of the clone's number
(:func:`task_id`, :func:`context_id`), so a reader can pick one at random without a list.
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg

from a2a_wire import codec
from a2a_wire.server.store import EventLogStore
from a2a_wire.types import (
    Artifact,
    Message,
    Part,
    Role,
    Task,
    TaskArtifactUpdateEvent,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
    Timestamp,
)

OWNER = ""
"""The owner of every loaded task (the server's anonymous caller)."""

PER_CONTEXT = 10
"""Tasks per context."""

TEMPLATE_ID = "00000000-0000-4000-8000-00000000feed"
TEMPLATE_CONTEXT = "00000000-0000-4000-8000-00000000c0de"
TEMPLATE_TIME = Timestamp(seconds=1_600_000_000, nanos=123_000_000)
FIRST_SECOND = 1_700_000_000
CHUNK = 20_000
DEAD_URL = "http://127.0.0.1:9/dead"
LIVE_URL = "http://127.0.0.1:9/live"


def _uuid(salt: str, i: int) -> str:
    return str(uuid.UUID(bytes=hashlib.blake2b(f"{salt}:{i}".encode(), digest_size=16).digest()))


def task_id(i: int) -> str:
    """The id of clone ``i``."""
    return _uuid("task", i)


def context_id(c: int) -> str:
    """The id of context ``c`` (clones ``c * PER_CONTEXT`` to ``(c + 1) * PER_CONTEXT - 1``)."""
    return _uuid("context", c)


def _stamp(i: int) -> tuple[int, int, bytes]:
    """Clone ``i``'s status time: seconds, nanos and its JSON text (as the codec writes it)."""
    seconds, millis = FIRST_SECOND + i, 1 + i % 999
    text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{millis:03d}Z"
    return seconds, millis * 1_000_000, text.encode()


def _template_stamp() -> bytes:
    return (
        codec.encode(TaskStatus(state=TaskState.COMPLETED, timestamp=TEMPLATE_TIME))
        .split(b'"timestamp":"')[1]
        .split(b'"')[0]
    )


async def write_template(store: EventLogStore) -> None:
    """Write the template task through the store API."""
    first = Message(message_id="m1", role=Role.USER, parts=[Part(text="what is the answer?")])
    first.task_id, first.context_id = TEMPLATE_ID, TEMPLATE_CONTEXT
    status = TaskStatus(state=TaskState.SUBMITTED)
    task = Task(id=TEMPLATE_ID, context_id=TEMPLATE_CONTEXT, status=status, history=[first])
    await store.create(task, owner=OWNER)
    artifact = Artifact(artifact_id="answer", parts=[Part(text="forty-two " * 20)])
    done = TaskStatus(state=TaskState.COMPLETED, timestamp=TEMPLATE_TIME)
    events = [
        TaskStatusUpdateEvent(status=TaskStatus(state=TaskState.WORKING)),
        TaskArtifactUpdateEvent(artifact=artifact, last_chunk=True),
        TaskStatusUpdateEvent(status=done),
    ]
    await store.append(TEMPLATE_ID, events)


@dataclass
class Clone:
    """What changes from the template to clone ``i``."""

    i: int
    id: str
    context: str
    seconds: int
    nanos: int
    changed_at: float
    replace: Any

    @classmethod
    def of(cls, i: int, now: float, n: int) -> Clone:
        tid, ctx = task_id(i), context_id(i // PER_CONTEXT)
        seconds, nanos, text = _stamp(i)
        pairs = (
            (TEMPLATE_ID.encode(), tid.encode()),
            (TEMPLATE_CONTEXT.encode(), ctx.encode()),
            (_TEMPLATE_TEXT, text),
        )

        def replace(body: bytes) -> bytes:
            for old, new in pairs:
                body = body.replace(old, new)
            return body

        # Finished within the last ten minutes, oldest first: a server's own sweeper leaves them.
        changed = now - 600 + 300 * i / max(n, 1)
        return cls(i, tid, ctx, seconds, nanos, changed, replace)


_TEMPLATE_TEXT = _template_stamp()


def _clones(n: int) -> Iterator[list[Clone]]:
    now = time.time()
    for start in range(0, n, CHUNK):
        yield [Clone.of(i, now, n) for i in range(start, min(n, start + CHUNK))]


# --- SQLite --------------------------------------------------------------------------------------


def load_sqlite(path: Path, n: int) -> None:
    """Clone the template ``n`` times into the SQLite file (the store closed)."""
    con = sqlite3.connect(path, isolation_level=None)
    try:
        con.execute("PRAGMA synchronous = OFF")
        row = con.execute(
            "SELECT ref, state, first_seq, snap_seq, body FROM tasks WHERE id = ?", (TEMPLATE_ID,)
        ).fetchone()
        ref, state, first_seq, snap_seq, body = row
        events = con.execute(
            "SELECT seq, kind, body FROM task_events WHERE task_ref = ? ORDER BY seq", (ref,)
        ).fetchall()
        for chunk in _clones(n):
            tasks, logged = [], []
            for c in chunk:
                number = ref + 1 + c.i
                tasks.append(
                    (number, c.id, OWNER, c.context, state, c.seconds, c.nanos, c.changed_at,
                     first_seq, snap_seq, c.replace(body))
                )  # fmt: skip
                logged += [(number, seq, kind, c.replace(data)) for seq, kind, data in events]
            con.execute("BEGIN")
            con.executemany(
                "INSERT INTO tasks (ref, id, owner, context_id, state, status_s, status_ns,"
                " changed_at, first_seq, snap_seq, body) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                tasks,
            )
            con.executemany("INSERT INTO task_events VALUES (?,?,?,?)", logged)
            con.execute("COMMIT")
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        con.close()


def backlog_sqlite(path: Path, rows: int, lanes: int) -> None:
    """Put ``rows`` undelivered rows of one dead webhook, in ``lanes`` lanes, in the file."""
    con = sqlite3.connect(path, isolation_level=None)
    try:
        con.execute("BEGIN")
        con.executemany(
            "INSERT INTO push_configs (task_id, id, position, body) VALUES (?, 'dead', 1, ?)",
            [(_dead(j), _config(_dead(j), "dead", DEAD_URL)) for j in range(lanes)],
        )
        con.executemany(
            "INSERT INTO push_outbox (delivery_id, task_id, config_id, body, created_at, attempts,"
            " next_attempt_at, last_error) VALUES (?, ?, 'dead', ?, ?, ?, ?, ?)",
            _backlog_rows(rows, lanes),
        )
        con.execute("COMMIT")
    finally:
        con.close()


# --- PostgreSQL ----------------------------------------------------------------------------------


async def load_postgresql(dsn: str, schema: str, n: int) -> None:
    """Clone the template ``n`` times into the schema by COPY, then ANALYZE."""
    conn = await asyncpg.connect(dsn)
    try:
        head = await conn.fetchrow(
            f"SELECT state, first_seq, last_seq, tail_bytes FROM {schema}.tasks WHERE id = $1",
            TEMPLATE_ID,
        )
        snap = await conn.fetchrow(
            f"SELECT seq, body FROM {schema}.task_snapshots WHERE task_id = $1", TEMPLATE_ID
        )
        events = await conn.fetch(
            f"SELECT seq, kind, body FROM {schema}.task_events WHERE task_id = $1 ORDER BY seq",
            TEMPLATE_ID,
        )
        for chunk in _clones(n):
            tasks, snaps, logged = [], [], []
            for c in chunk:
                body = c.replace(snap["body"])
                tasks.append(
                    (c.id, OWNER, c.context, head["state"], c.seconds, c.nanos, c.changed_at,
                     head["first_seq"], head["last_seq"], len(body), head["tail_bytes"], False)
                )  # fmt: skip
                snaps.append((c.id, snap["seq"], body))
                logged += [(c.id, e["seq"], e["kind"], c.replace(e["body"])) for e in events]
            async with conn.transaction():
                await conn.copy_records_to_table(
                    "tasks", schema_name=schema, records=tasks,
                    columns=["id", "owner", "context_id", "state", "status_s", "status_ns",
                             "changed_at", "first_seq", "last_seq", "snap_bytes", "tail_bytes",
                             "deleted"],
                )  # fmt: skip
                await conn.copy_records_to_table(
                    "task_snapshots", schema_name=schema, records=snaps
                )
                await conn.copy_records_to_table("task_events", schema_name=schema, records=logged)
        await conn.execute(f"ANALYZE {schema}.tasks, {schema}.task_snapshots, {schema}.task_events")
    finally:
        await conn.close()


async def backlog_postgresql(dsn: str, schema: str, rows: int, lanes: int) -> None:
    """Put ``rows`` undelivered rows of one dead webhook, in ``lanes`` lanes, in the schema."""
    conn = await asyncpg.connect(dsn)
    try:
        configs = [(_dead(j), "dead", _config(_dead(j), "dead", DEAD_URL)) for j in range(lanes)]
        await conn.copy_records_to_table(
            "push_configs", schema_name=schema, records=configs, columns=["task_id", "id", "body"]
        )
        records = [
            (delivery, task, "dead", body, created, attempts, due, error)
            for delivery, task, body, created, attempts, due, error in _backlog_rows(rows, lanes)
        ]
        await conn.copy_records_to_table(
            "push_outbox", schema_name=schema, records=records,
            columns=["delivery_id", "task_id", "config_id", "body", "created_at", "attempts",
                     "next_attempt_at", "last_error"],
        )  # fmt: skip
        await conn.execute(f"ANALYZE {schema}.push_outbox, {schema}.push_configs")
    finally:
        await conn.close()


# --- the outbox ----------------------------------------------------------------------------------


def _dead(j: int) -> str:
    return f"dead-{j:08d}"


def _config(task: str, config_id: str, url: str) -> bytes:
    return codec.encode(TaskPushNotificationConfig(task_id=task, id=config_id, url=url))


def _backlog_rows(rows: int, lanes: int) -> Iterator[tuple[Any, ...]]:
    """Rows written as the dead webhook's tasks worked, interleaved; each lane's head retried."""
    now = time.time()
    body = b'{"statusUpdate":{"taskId":"dead","contextId":"dead","status":{"state":"TASK_STATE_WORKING"}}}'
    for k in range(rows):
        head = k < lanes
        yield (
            uuid.uuid4().hex, _dead(k % lanes), body, now - 60,
            3 if head else 0, now + 3600 if head else 0.0, "connection refused" if head else "",
        )  # fmt: skip


async def write_live_task(store: EventLogStore, tag: str) -> str:
    """A new working task with a config of a live webhook, its first row in the outbox."""
    tid = f"live-{tag}-{uuid.uuid4().hex[:12]}"
    config = TaskPushNotificationConfig(task_id=tid, id="live", url=LIVE_URL)
    task = Task(id=tid, context_id=f"ctx-{tid}", status=TaskStatus(state=TaskState.WORKING))
    await store.create(task, owner=OWNER, push_configs=[config], push=True)
    return tid
