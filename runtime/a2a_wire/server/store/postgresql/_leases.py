"""Leases of the PostgreSQL store: which process runs a task's executor, and takeover when it dies.

Every running task has a lease, renewed by its holder's heartbeat; an expired one is ended only by
the takeover scan, which fails a task still SUBMITTED or WORKING. Times come from the lease
clock (the database server's), so hosts whose clocks differ agree. See docs/internals/store.md,
"PostgreSQL: leases and takeover".
"""

from __future__ import annotations

import asyncio
import builtins
import logging
import uuid
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from a2a_wire._protocol.tasks import now_timestamp
from a2a_wire.server.store._contract.tasks import RECOVERED_STATES
from a2a_wire.server.store._fold.events import prepare, restart_event
from a2a_wire.server.store.postgresql._fence import Fence
from a2a_wire.server.store.postgresql._lease_statements import LeaseStatements
from a2a_wire.server.store.postgresql._state import StoreState
from a2a_wire.server.store.postgresql._writes import (
    DROP,
    LeaseChange,
    fold_snapshot,
    write_batch,
)
from a2a_wire.types import TaskState

if TYPE_CHECKING:
    pass

__all__ = [
    "HEARTBEAT_SECONDS",
    "LEASE_SECONDS",
    "PROCESS_LOST_MESSAGE",
    "TAKEOVER_BATCH",
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


class PostgresLeases(StoreState):
    """The lease part of :class:`~._store.PostgresTaskStore` (see the module docstring).

    It reads the store's state of :class:`~._state.StoreState`; its own is set by
    :meth:`_init_leases`.
    """

    _leases: LeaseStatements
    _confirmed: dict[str, float]
    _lost_callbacks: builtins.list[Callable[[str], None]]
    _takeover_callbacks: builtins.list[Callable[[str, bool], None]]
    _beat_deadline: float
    _fence: Fence

    def _init_leases(
        self,
        schema: str,
        process_id: str | None,
        lease_seconds: float,
        lease_clock: Callable[[], float] | None,
        beat_deadline: float,
    ) -> None:
        self.process_id = process_id or uuid.uuid4().hex
        self._leases = LeaseStatements.for_schema(schema)
        self._lease_seconds = lease_seconds
        self._lease_clock = lease_clock
        self._held = set()
        self._confirmed = {}
        self._lost_callbacks = []
        self._takeover_callbacks = []
        self._beat_deadline = beat_deadline
        self._fence = Fence(lease_seconds - beat_deadline, beat_deadline, self._fence_leases)

    def _lease_now(self) -> float | None:
        return None if self._lease_clock is None else self._lease_clock()

    def _lease(self, op: int) -> LeaseChange:
        return LeaseChange(op, self.process_id, self._lease_now(), self._lease_seconds)

    def _took(self, task_id: str, started: float) -> None:
        """A write that began at loop time ``started`` took the task's lease for this store."""
        self._held.add(task_id)
        self._confirmed[task_id] = started

    def holds(self, task_id: str) -> bool:
        """Whether this store holds the task's lease as of its last write or heartbeat (no I/O)."""
        return task_id in self._held

    def on_lease_lost(self, callback: Callable[[str], None]) -> None:
        """Call ``callback(task_id)`` when a heartbeat finds a lease of this store gone."""
        self._lost_callbacks.append(callback)

    def on_takeover(self, callback: Callable[[str, bool], None]) -> None:
        """Call ``callback(task_id, failed)`` for each expired lease a takeover scan ends here."""
        self._takeover_callbacks.append(callback)

    async def acquire(self, task_id: str) -> bool:
        """Take the task's lease for this process, or renew it if this process holds it.

        Returns:
            ``False`` when another process holds it (also while an expired lease waits for the
            takeover scan) or there is no such task.
        """
        started = asyncio.get_running_loop().time()
        got = await self._pool.fetchval(
            self._leases.acquire, task_id, self.process_id, self._lease_now(), self._lease_seconds
        )
        if got:
            self._took(task_id, started)
        return bool(got)

    async def release(self, task_id: str) -> bool:
        """Give up this process's lease on a task.

        On a task still SUBMITTED or WORKING the lease is expired rather than removed, so the
        next takeover scan applies the restart rule to it; otherwise it is removed. The store
        forgets the lease first: if the database cannot be reached, it is left to expire.

        Returns:
            Whether this process held it.

        Raises:
            StoreUnavailableError: the database could not be reached (the lease is forgotten).
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
        """Renew this process's row, held leases and delivery claims (one statement, bounded).

        Returns:
            Ids of tasks whose lease this store held and found gone; each was also given to the
            :meth:`on_lease_lost` callbacks.

        Raises:
            StoreUnavailableError: no answer within the heartbeat's deadline.
        """
        started = asyncio.get_running_loop().time()
        before = set(self._held)
        found = await self._pool.fetch(
            self._leases.heartbeat,
            self.process_id,
            self._lease_now(),
            self._lease_seconds,
            sorted(before),
            timeout=self._beat_deadline,
        )
        self._fence.beat(started)
        renewed = {task_id for (task_id,) in found}
        for task_id in renewed & self._held:
            self._confirmed[task_id] = max(self._confirmed.get(task_id, started), started)
        lost = sorted((before & self._held) - renewed)
        self._forget(lost)
        for task_id in set(self._confirmed) - self._held:  # released or deleted meanwhile
            del self._confirmed[task_id]
        self._report_lost(lost)
        return lost

    def _forget(self, task_ids: Iterable[str]) -> None:
        for task_id in task_ids:
            self._held.discard(task_id)
            self._confirmed.pop(task_id, None)

    def _fence_leases(self) -> float | None:
        """The fence: stop the runs of the leases last confirmed (taken or renewed) nearly a lease ago.

        A lease taken since the last good heartbeat (the database answered a write again) is kept
        until its own time comes (those due before the next firing go together).

        Returns:
            The loop time at which the next kept lease falls due, if any.
        """
        now = asyncio.get_running_loop().time()
        unknown = float("-inf")  # a lease held without a time: fence it
        soon = now + self._fence.again  # those due before the next firing go now, in one line
        due = sorted(
            t for t in self._held if self._confirmed.get(t, unknown) + self._fence.after <= soon
        )
        if due:
            self._forget(due)
            log.warning(
                "task store: no heartbeat reached PostgreSQL for %.1f s; stopping the runs of %d"
                " tasks before their leases expire",
                self._fence.after,
                len(due),
            )
            self._report_lost(due)
        kept = [self._confirmed[t] + self._fence.after for t in self._held]
        return min(kept, default=None)

    def _report_lost(self, lost: builtins.list[str]) -> None:
        for task_id in lost:
            for callback in self._lost_callbacks:
                try:
                    callback(task_id)
                except Exception:  # a callback's failure must not stop the heartbeat
                    log.exception("task store: lease-lost callback failed for task %s", task_id)

    def _report_takeover(self, task_id: str, failed: bool) -> None:
        for callback in self._takeover_callbacks:
            try:
                callback(task_id, failed)
            except Exception:  # a callback's failure must not stop the scan
                log.exception("task store: takeover callback failed for task %s", task_id)

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
        dead: dict[str, list[int]] = {}  # per dead process: its tasks failed, and released here
        for (task_id,) in found:
            taken = await self._take(task_id, now)
            if taken is None:
                continue
            owner, holder, was_failed = taken
            counts = dead.setdefault(holder, [0, 0])
            counts[0 if was_failed else 1] += 1
            self._report_takeover(task_id, was_failed)
            if not was_failed:
                continue
            failed.append(task_id)
            self._held.discard(task_id)
            self._heads.pop(task_id, None)
            self._waiters.wake(task_id)
            await fold_snapshot(self._pool, self._target.sql, task_id, owner, self._history_limit)
        await self._pool.execute(self._leases.tidy, now)
        for holder, (lost, released) in sorted(dead.items()):
            _log_takeover(holder, lost, released)
        return failed

    async def _take(self, task_id: str, now: float | None) -> tuple[str, str, bool] | None:
        """End one expired lease: the task's owner, the lease's holder and whether it was failed.

        ``None`` when the lease was not this store's to end (renewed, or another store's).
        """
        async with self._pool.acquire() as conn, conn.transaction():
            row = await conn.fetchrow(self._leases.lock_task, task_id)
            if row is None and await conn.fetchval(self._leases.task_alive, task_id):
                return None  # another store is writing to it: the next scan looks again
            holder = await conn.fetchval(self._leases.lock_lease, task_id, now)
            if holder is None:
                return None  # renewed, or another store is ending it
            if row is None or TaskState(row[2]) not in RECOVERED_STATES:
                await conn.execute(self._leases.drop, task_id)
                return ("" if row is None else str(row[0])), str(holder), False
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
        return str(owner), str(holder), True

    async def _end_process(self) -> None:
        """Expire this process's leases, give back its claims, remove its row (close, open)."""
        self._held.clear()
        await self._pool.execute(self._leases.close, self.process_id)


def _log_takeover(holder: str, failed: int, released: int) -> None:
    """One line per dead process a scan took over from: a warning if it failed tasks of it."""
    kept = f", released {released} waiting for the client" if released else ""
    log.log(
        logging.WARNING if failed else logging.INFO,
        "task store: took over from process %s, whose lease expired: failed its %d running"
        " task(s)%s",
        holder,
        failed,
        kept,
    )
