"""Leases of the PostgreSQL store: which process runs a task's executor, and takeover when it dies.

Theory of operation
-------------------
Every store instance is a *process* with an id of its own (:attr:`PostgresLeases.process_id`,
random unless given). The process that runs a task's executor holds the task's *lease*, one row
of ``task_leases`` with the holder and an expiry time. The rules:

* **Every running task has a lease.** ``create`` of a SUBMITTED or WORKING task writes the
  creating store's lease in the same statement; an append that moves a task into a running
  state from another one gives the appending store the lease unless one is held; an append that
  leaves a task terminal or interrupted ends the lease (:func:`~._log_postgres_write.lease_change`).
  :meth:`PostgresLeases.acquire` takes a lease ahead of such an append (a follow-up resuming an
  interrupted task), and fails while any other process's lease row exists, even an expired one:
  an expired lease is ended only by the takeover scan, which applies the restart rule.
* **Heartbeat.** :meth:`PostgresLeases.heartbeat` is one statement that renews every lease and
  delivery claim of the process and its row in ``processes``, by ``lease_seconds`` from now;
  a lease released (expired to ``-infinity``) stays released. The
  store's keeper task beats every ``heartbeat_seconds``; :data:`LEASE_SECONDS` and
  :data:`HEARTBEAT_SECONDS` give a dead process's tasks to another within 13 s (the lease, then
  at most one scan period), under the 15 s the scale-out issue allows.
* **Takeover.** :meth:`PostgresLeases.take_over` (the keeper runs it after each beat, ``open``
  once) ends expired leases one task at a time, each in a transaction that locks the task's
  head row and then the lease row, both ``FOR UPDATE SKIP LOCKED``: a row another store is
  working on is skipped, so exactly one store takes each task over, and a lease renewed
  meanwhile is left alone (the lock's re-check sees the new expiry). A task still SUBMITTED or
  WORKING gets the FAILED status of :func:`~._log_fold.restart_event` with
  :data:`PROCESS_LOST_MESSAGE`, logged like any append (event, outbox rows, notification), so
  streams on every process see it; an interrupted or finished task only loses the lease and
  stays as it is. The lock order, task row before lease row, is the appends' order too.
* **Closing** a store expires its leases at once and gives back its delivery claims, so other
  processes (or the next ``open`` of a restarted one) take over without waiting: a lone process
  restarting fails its running tasks on ``open`` as the SQLite store does. ``open`` does the
  same first for its own process id, in case it was given one a previous process used: a new
  store runs no executor yet, so any lease under its id is left over.

A heartbeat that finds a lease gone which this store held (another process ended the task, or
took it over after this one stalled) reports it to the :meth:`PostgresLeases.on_lease_lost`
callbacks: that executor's appends would be refused anyway, and the server stops it
(:mod:`a2a_wire.server._peers`; the store protocol part is :mod:`._shared`).

Times come from the *lease clock*: the database server's clock unless a store is given one
(tests), so that processes on hosts whose clocks differ agree on expiry.
"""

from __future__ import annotations

import builtins
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

from a2a_wire.server.store._base import RECOVERED_STATES, now_timestamp, state_key
from a2a_wire.server.store._log_fold import prepare, restart_event
from a2a_wire.server.store._log_postgres_listen import GapWaiters
from a2a_wire.server.store._log_postgres_rows import Head
from a2a_wire.server.store._log_postgres_sql import NOW
from a2a_wire.server.store._log_postgres_write import (
    DROP,
    LeaseChange,
    Target,
    fold_snapshot,
    write_batch,
)
from a2a_wire.types import TaskState

if TYPE_CHECKING:
    import asyncpg

__all__ = [
    "HEARTBEAT_SECONDS",
    "LEASE_SECONDS",
    "PROCESS_LOST_MESSAGE",
    "TAKEOVER_BATCH",
    "LeaseStatements",
    "PostgresLeases",
]

log = logging.getLogger("a2a_wire.server.store")

LEASE_SECONDS = 10.0
"""Default seconds a lease (and a delivery claim) lasts after the heartbeat that renewed it."""

HEARTBEAT_SECONDS = 3.0
"""Default seconds between a store's heartbeats, each followed by a takeover scan."""

TAKEOVER_BATCH = 500
"""Most expired leases one takeover scan looks at."""

PROCESS_LOST_MESSAGE = (
    "The server process running this task stopped while the task was in progress, so its work "
    "was lost. Send the request again to start a new task."
)
"""Text of the agent status message put on tasks failed by a takeover."""

_RUNNING = "(" + ", ".join(sorted(f"'{state_key(s)}'" for s in RECOVERED_STATES)) + ")"

_HEARTBEAT = """
WITH now AS (SELECT {now2} AS t), beat AS (
  INSERT INTO {s}.processes (id, started_at, beat_at, expires_at)
  SELECT $1, t, t, t + $3 FROM now
  ON CONFLICT (id) DO UPDATE SET beat_at = excluded.beat_at, expires_at = excluded.expires_at
), claims AS (
  UPDATE {s}.push_outbox SET claim_until = now.t + $3 FROM now WHERE claimed_by = $1
), leases AS (
  UPDATE {s}.task_leases SET expires_at = now.t + $3 FROM now
  WHERE process_id = $1 AND expires_at > '-infinity'
  RETURNING task_id
)
SELECT task_id FROM leases
"""

_ACQUIRE = """
INSERT INTO {s}.task_leases (task_id, process_id, expires_at)
SELECT id, $2, {now3} + $4 FROM {s}.tasks WHERE id = $1 AND NOT deleted
ON CONFLICT (task_id) DO UPDATE SET expires_at = excluded.expires_at
WHERE task_leases.process_id = excluded.process_id
RETURNING 1
"""

_RELEASE = """
WITH t AS (
  SELECT state IN {running} AS running FROM {s}.tasks WHERE id = $1 FOR SHARE
), gone AS (
  DELETE FROM {s}.task_leases WHERE task_id = $1 AND process_id = $2
  AND NOT EXISTS (SELECT 1 FROM t WHERE running) RETURNING 1
), expired AS (
  UPDATE {s}.task_leases SET expires_at = '-infinity' WHERE task_id = $1 AND process_id = $2
  AND EXISTS (SELECT 1 FROM t WHERE running) RETURNING 1
)
SELECT (SELECT count(*) FROM gone) + (SELECT count(*) FROM expired)
"""

_TIDY = """
WITH now AS (SELECT {now1} AS t), processes AS (
  DELETE FROM {s}.processes p USING now WHERE p.expires_at < now.t
  AND NOT EXISTS (SELECT 1 FROM {s}.task_leases l WHERE l.process_id = p.id)
), replies AS (
  DELETE FROM {s}.cancel_replies r USING now WHERE r.replied_at < now.t - 3600
  OR NOT EXISTS (SELECT 1 FROM {s}.processes p WHERE p.id = r.asker AND p.expires_at >= now.t)
)
DELETE FROM {s}.cancel_requests c WHERE NOT EXISTS (
  SELECT 1 FROM {s}.task_leases l WHERE l.task_id = c.task_id AND l.process_id = c.process_id)
"""

_CLOSE = """
WITH leases AS (
  UPDATE {s}.task_leases SET expires_at = '-infinity' WHERE process_id = $1
), claims AS (
  UPDATE {s}.push_outbox SET claimed_by = NULL, claim_until = 0 WHERE claimed_by = $1
)
DELETE FROM {s}.processes WHERE id = $1
"""


@dataclass(frozen=True, slots=True)
class LeaseStatements:
    """The lease statements with the schema's name filled in (see :mod:`._log_postgres_sql`)."""

    heartbeat: str
    acquire: str
    release: str
    expired: str
    lock_task: str
    task_alive: str
    lock_lease: str
    drop: str
    holder: str
    processes: str
    tidy: str
    close: str

    @classmethod
    def for_schema(cls, schema: str) -> LeaseStatements:
        """The statements on the tables of ``schema`` (a name already checked)."""
        texts = {
            "heartbeat": _HEARTBEAT,
            "acquire": _ACQUIRE,
            "release": _RELEASE,
            "expired": "SELECT task_id FROM {s}.task_leases WHERE expires_at < {now1}"
            " ORDER BY expires_at, task_id LIMIT $2",
            "lock_task": "SELECT owner, context_id, state, last_seq FROM {s}.tasks"
            " WHERE id = $1 AND NOT deleted FOR UPDATE SKIP LOCKED",
            "task_alive": "SELECT EXISTS (SELECT 1 FROM {s}.tasks WHERE id = $1 AND NOT deleted)",
            "lock_lease": "SELECT process_id FROM {s}.task_leases"
            " WHERE task_id = $1 AND expires_at < {now2} FOR UPDATE SKIP LOCKED",
            "drop": "WITH c AS (DELETE FROM {s}.cancel_requests WHERE task_id = $1)"
            " DELETE FROM {s}.task_leases WHERE task_id = $1",
            "holder": "SELECT process_id FROM {s}.task_leases"
            " WHERE task_id = $1 AND expires_at >= {now2}",
            "processes": "SELECT id FROM {s}.processes WHERE expires_at >= {now1} ORDER BY id",
            "tidy": _TIDY,
            "close": _CLOSE,
        }
        assert set(texts) == {f.name for f in fields(cls)}
        marks = {f"now{n}": NOW.replace("{n}", str(n)) for n in (1, 2, 3)}
        return cls(
            **{
                name: text.strip().format(s=schema, running=_RUNNING, **marks)
                for name, text in texts.items()
            }
        )


class PostgresLeases:
    """The lease part of :class:`~._log_postgres.PostgresEventLog` (see the module docstring).

    The task store provides the pool, its target and the attributes annotated here.
    """

    process_id: str
    _target: Target
    _leases: LeaseStatements
    _lease_seconds: float
    _lease_clock: Callable[[], float] | None
    _held: set[str]
    _lost_callbacks: builtins.list[Callable[[str], None]]
    _heads: dict[str, Head]
    _waiters: GapWaiters
    _history_limit: int | None
    _clock: Callable[[], float]

    @property
    def _pool(self) -> asyncpg.Pool:
        raise NotImplementedError  # pragma: no cover - provided by the task store

    def _init_leases(
        self,
        schema: str,
        process_id: str | None,
        lease_seconds: float,
        lease_clock: Callable[[], float] | None,
    ) -> None:
        self.process_id = process_id or uuid.uuid4().hex
        self._leases = LeaseStatements.for_schema(schema)
        self._lease_seconds = lease_seconds
        self._lease_clock = lease_clock
        self._held = set()
        self._lost_callbacks = []

    def _lease_now(self) -> float | None:
        return None if self._lease_clock is None else self._lease_clock()

    def _lease(self, op: int) -> LeaseChange:
        return LeaseChange(op, self.process_id, self._lease_now(), self._lease_seconds)

    def holds(self, task_id: str) -> bool:
        """Whether this store holds the task's lease as of its last write or heartbeat (no I/O)."""
        return task_id in self._held

    def on_lease_lost(self, callback: Callable[[str], None]) -> None:
        """Call ``callback(task_id)`` when a heartbeat finds a lease of this store gone."""
        self._lost_callbacks.append(callback)

    async def acquire(self, task_id: str) -> bool:
        """Take the task's lease for this process, or renew it if this process holds it.

        Returns:
            ``False`` when another process holds it (also while an expired lease waits for the
            takeover scan) or there is no such task.
        """
        got = await self._pool.fetchval(
            self._leases.acquire, task_id, self.process_id, self._lease_now(), self._lease_seconds
        )
        if got:
            self._held.add(task_id)
        return bool(got)

    async def release(self, task_id: str) -> bool:
        """Give up this process's lease on a task.

        On a task still SUBMITTED or WORKING the lease is expired rather than removed, so the
        next takeover scan applies the restart rule to it; otherwise it is removed.

        Returns:
            Whether this process held it.
        """
        self._held.discard(task_id)
        return bool(await self._pool.fetchval(self._leases.release, task_id, self.process_id))

    async def lease_holder(self, task_id: str) -> str | None:
        """The process holding a live lease on the task, or ``None``."""
        holder = await self._pool.fetchval(self._leases.holder, task_id, self._lease_now())
        return None if holder is None else str(holder)

    async def live_processes(self) -> builtins.list[str]:
        """Ids of the processes whose heartbeat has not expired."""
        found = await self._pool.fetch(self._leases.processes, self._lease_now())
        return [str(process_id) for (process_id,) in found]

    async def heartbeat(self) -> builtins.list[str]:
        """Renew this process's row, leases and delivery claims (one statement).

        Returns:
            Ids of tasks whose lease this store held and found gone; each was also given to the
            :meth:`on_lease_lost` callbacks.
        """
        before = set(self._held)
        found = await self._pool.fetch(
            self._leases.heartbeat, self.process_id, self._lease_now(), self._lease_seconds
        )
        renewed = {task_id for (task_id,) in found}
        lost = sorted((before & self._held) - renewed)
        self._held.difference_update(lost)
        for task_id in lost:
            for callback in self._lost_callbacks:
                try:
                    callback(task_id)
                except Exception:  # a callback's failure must not stop the heartbeat
                    log.exception("task store: lease-lost callback failed for task %s", task_id)
        return lost

    async def take_over(self, *, limit: int = TAKEOVER_BATCH) -> builtins.list[str]:
        """End expired leases by the restart rule (see "Takeover").

        Args:
            limit: Most expired leases to look at.

        Returns:
            Ids of the tasks this store failed.
        """
        now = self._lease_now()
        found = await self._pool.fetch(self._leases.expired, now, limit)
        failed = []
        for (task_id,) in found:
            owner = await self._take(task_id, now)
            if owner is None:
                continue
            failed.append(task_id)
            self._held.discard(task_id)
            self._heads.pop(task_id, None)
            self._waiters.wake(task_id)
            await fold_snapshot(self._pool, self._target.sql, task_id, owner, self._history_limit)
        await self._pool.execute(self._leases.tidy, now)
        return failed

    async def _take(self, task_id: str, now: float | None) -> str | None:
        """End one expired lease; the task's owner if the task was failed, else ``None``."""
        async with self._pool.acquire() as conn, conn.transaction():
            row = await conn.fetchrow(self._leases.lock_task, task_id)
            if row is None and await conn.fetchval(self._leases.task_alive, task_id):
                return None  # another store is writing to it: the next scan looks again
            if await conn.fetchval(self._leases.lock_lease, task_id, now) is None:
                return None  # renewed, or another store is ending it
            if row is None or TaskState(row[2]) not in RECOVERED_STATES:
                await conn.execute(self._leases.drop, task_id)
                return None
            owner, context_id, state, last_seq = row
            event = restart_event(task_id, context_id, now_timestamp(), PROCESS_LOST_MESSAGE)
            prepared = prepare(task_id, context_id, TaskState(state), [event], now_timestamp())
            changed_at, lease = self._clock(), self._lease(DROP)
            written = await write_batch(
                conn,
                self._target,
                task_id,
                last_seq,
                prepared,
                push=True,
                changed_at=changed_at,
                lease=lease,
            )
            assert written is not None  # the head row is locked
            await conn.execute(self._leases.drop, task_id)
        return str(owner)

    async def _end_process(self) -> None:
        """Expire this process's leases, give back its claims, remove its row (close, open)."""
        self._held.clear()
        await self._pool.execute(self._leases.close, self.process_id)
