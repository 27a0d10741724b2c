"""Cancel from anywhere, and the PostgreSQL store's keeper task (heartbeat, takeover, cancels).

Cancel requests
---------------
CancelTask (spec 3.1.5) may reach any process, while the executor runs in the one holding the
task's lease (:mod:`._log_postgres_lease`). :meth:`PostgresCancels.request_cancel` writes a row
of ``cancel_requests`` naming the task and the live lease holder, and in the same statement
sends ``NOTIFY <schema>_cancels, '<holder's process id>'``. Every store listens on that channel
too (:class:`~._log_postgres_listen.Listener`); the holder's keeper wakes and
:meth:`PostgresCancels.poll_cancels` deletes its rows and hands each task id to the
:meth:`PostgresCancels.on_cancel` callbacks. A lost notification costs one ``poll_interval``:
the keeper also takes its rows on every tick. The answer to the client and the race with the
executor's own final status are the server's rules, as on one process
(:mod:`a2a_wire.server._cancel`, :mod:`a2a_wire.server._peers`); the store only carries the
request. A request whose lease ended meanwhile (the task finished, or was taken over) is
deleted by the next takeover scan.

The keeper
----------
One task per open store. It ticks every ``poll_interval`` seconds, or at once when a cancel
notification for this process arrives, and takes the cancel requests (when a callback is
registered); every ``heartbeat_seconds`` it beats (:meth:`~.PostgresLeases.heartbeat`) and runs
the takeover scan (:meth:`~.PostgresLeases.take_over`). With ``heartbeat_seconds=None`` it
only takes cancel requests, and beating is the caller's (tests drive leases with a clock of
their own that way). Failures are logged and tried again at the next tick: a database outage
shorter than the lease costs nobody a task.
"""

from __future__ import annotations

import asyncio
import builtins
import logging
import math
from collections.abc import Callable

from a2a_wire.server.store._log_postgres_lease import PostgresLeases
from a2a_wire.server.store._log_postgres_sql import NOW

__all__ = ["PostgresCancels"]

log = logging.getLogger("a2a_wire.server.store")

_REQUEST = f"""
WITH now AS (SELECT {NOW.replace("{n}", "2")} AS t), holder AS (
  SELECT l.process_id FROM {{s}}.task_leases l, now WHERE l.task_id = $1 AND l.expires_at >= now.t
), asked AS (
  INSERT INTO {{s}}.cancel_requests (task_id, process_id, requested_at)
  SELECT $1, holder.process_id, now.t FROM holder, now
  ON CONFLICT (task_id) DO UPDATE SET process_id = excluded.process_id,
    requested_at = excluded.requested_at
  RETURNING process_id
)
SELECT process_id, pg_notify($3, process_id) FROM asked
"""

_TAKE = "DELETE FROM {s}.cancel_requests WHERE process_id = $1 RETURNING task_id"


class PostgresCancels(PostgresLeases):
    """Cancel requests and the keeper of :class:`~._log_postgres.PostgresEventLog`."""

    _poll: float
    _heartbeat_seconds: float | None
    _cancel_callbacks: builtins.list[Callable[[str], None]]
    _cancel_due: asyncio.Event
    _keeper: asyncio.Task[None] | None

    def _init_cancels(self, heartbeat_seconds: float | None) -> None:
        schema = self._target.schema
        self._request_sql = _REQUEST.strip().format(s=schema)
        self._take_sql = _TAKE.format(s=schema)
        self._heartbeat_seconds = heartbeat_seconds
        self._cancel_callbacks = []
        self._cancel_due = asyncio.Event()
        self._keeper = None

    def on_cancel(self, callback: Callable[[str], None]) -> None:
        """Call ``callback(task_id)`` for each cancel request sent to this process."""
        self._cancel_callbacks.append(callback)
        self._cancel_due.set()  # requests may be waiting already

    async def request_cancel(self, task_id: str) -> str | None:
        """Ask the process holding the task's live lease to cancel the task.

        The holder may be this process: the request then reaches this store's callbacks.

        Returns:
            The holder's process id, or ``None`` when no live process holds the lease (nothing
            was sent: the task is not running, or its process died and the takeover scan has
            not ended the lease yet).
        """
        row = await self._pool.fetchrow(
            self._request_sql, task_id, self._lease_now(), self._target.cancel_channel
        )
        return None if row is None else str(row[0])

    async def poll_cancels(self) -> builtins.list[str]:
        """Take the cancel requests sent to this process and give them to the callbacks.

        Returns:
            Their task ids; none are taken while no callback is registered.
        """
        if not self._cancel_callbacks:
            return []
        found = await self._pool.fetch(self._take_sql, self.process_id)
        ids = [str(task_id) for (task_id,) in found]
        for task_id in ids:
            for callback in self._cancel_callbacks:
                try:
                    callback(task_id)
                except Exception:  # one callback's failure must not lose the others' requests
                    log.exception("task store: cancel callback failed for task %s", task_id)
        return ids

    def _cancel_notified(self, payload: str) -> None:
        """A notification on the cancel channel (from the listener)."""
        if payload == self.process_id:
            self._cancel_due.set()

    def _gap(self) -> None:
        """Notifications may have been lost (from the listener): wake readers, look for requests."""
        self._waiters.wake_all()
        self._cancel_due.set()

    def _start_keeper(self) -> None:
        self._keeper = asyncio.create_task(self._keep(), name=f"a2a-keeper-{self.process_id}")

    async def _stop_keeper(self) -> None:
        keeper, self._keeper = self._keeper, None
        if keeper is not None:
            keeper.cancel()
            await asyncio.gather(keeper, return_exceptions=True)

    async def _keep(self) -> None:
        loop = asyncio.get_running_loop()
        period = self._heartbeat_seconds
        beat_at = math.inf if period is None else loop.time() + period
        while True:
            wait = min(self._poll, max(0.0, beat_at - loop.time()))
            try:
                await asyncio.wait_for(self._cancel_due.wait(), wait)
            except TimeoutError:
                pass
            self._cancel_due.clear()
            try:
                await self.poll_cancels()
                if period is not None and loop.time() >= beat_at:
                    beat_at = loop.time() + period
                    await self.heartbeat()
                    await self.take_over()
            except Exception as exc:  # outermost boundary of a background task: keep going
                log.warning("task store: keeper step failed (%s); trying again", exc)
