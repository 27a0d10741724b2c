"""Cancel from anywhere, and the PostgreSQL store's keeper task (heartbeat, takeover, cancels).

A CancelTask reaching any process is carried to the lease holder as a row plus a notification,
and answered the same way; a lost notification costs one ``poll_interval``. The keeper's
failures are logged and tried again at the next tick. See docs/internals/store.md,
"PostgreSQL: cancel requests and the keeper".
"""

from __future__ import annotations

import asyncio
import builtins
import json
import logging
import math
from collections.abc import Awaitable, Callable

from a2a_wire._aio import wait_set
from a2a_wire.server.store._contract.errors import StoreUnavailableError
from a2a_wire.server.store._contract.shared import CancelReply, CancelRequest
from a2a_wire.server.store.postgresql._leases import PostgresLeases
from a2a_wire.server.store.postgresql._statements import NOW

__all__ = ["PostgresCancels"]

log = logging.getLogger("a2a_wire.server.store")

_REPLY_MARK = "reply:"
"""The start of a reply's notification payload on the cancel channel (the request id follows)."""

_REQUEST = f"""
WITH now AS (SELECT {NOW.replace("{n}", "2")} AS t), holder AS (
  SELECT l.process_id FROM {{s}}.task_leases l, now WHERE l.task_id = $1 AND l.expires_at >= now.t
), asked AS (
  INSERT INTO {{s}}.cancel_requests (id, task_id, process_id, requested_at, asker, metadata)
  SELECT $4, $1, holder.process_id, now.t, $5, $6::jsonb FROM holder, now
  ON CONFLICT (id) DO UPDATE SET process_id = EXCLUDED.process_id
  RETURNING process_id
)
SELECT process_id, pg_notify($3, process_id) FROM asked
"""

_TAKE = """
WITH taken AS (
  DELETE FROM {s}.cancel_requests WHERE process_id = $1
  RETURNING id, task_id, asker, metadata, requested_at
)
SELECT id, task_id, asker, metadata FROM taken ORDER BY requested_at, id
"""

_REPLY = f"""
WITH replied AS (
  INSERT INTO {{s}}.cancel_replies (request_id, task_id, asker, outcome, error, replied_at)
  VALUES ($1, $2, $3, $4, $5::jsonb, {NOW.replace("{n}", "6")})
  ON CONFLICT (request_id) DO NOTHING
  RETURNING request_id
)
SELECT pg_notify($7, '{_REPLY_MARK}' || request_id) FROM replied
"""

_TAKE_REPLY = "DELETE FROM {s}.cancel_replies WHERE request_id = $1 RETURNING outcome, error"


class PostgresCancels(PostgresLeases):
    """Cancel requests, their replies and the keeper of :class:`~._store.PostgresTaskStore`."""

    _heartbeat_seconds: float | None
    _cancel_callbacks: builtins.list[Callable[[CancelRequest], None]]
    _cancel_due: asyncio.Event
    _replies_due: dict[str, asyncio.Event]
    _keeper: asyncio.Task[None] | None

    def _init_cancels(self, heartbeat_seconds: float | None) -> None:
        schema = self._target.schema
        self._request_sql = _REQUEST.strip().format(s=schema)
        self._take_sql = _TAKE.strip().format(s=schema)
        self._reply_sql = _REPLY.strip().format(s=schema)
        self._take_reply_sql = _TAKE_REPLY.format(s=schema)
        self._heartbeat_seconds = heartbeat_seconds
        self._cancel_callbacks = []
        self._cancel_due = asyncio.Event()
        self._replies_due = {}
        self._keeper = None

    def on_cancel(self, callback: Callable[[CancelRequest], None]) -> None:
        """Call ``callback(request)`` for each cancel request sent to this process."""
        self._cancel_callbacks.append(callback)
        self._cancel_due.set()  # requests may be waiting already

    async def request_cancel(self, request: CancelRequest) -> str | None:
        """Send ``request`` to the process holding the task's live lease.

        The holder may be this process: the request then reaches this store's callbacks. A
        request sent again with the same id is notified again (see the module docstring).

        Returns:
            The holder's process id, or ``None`` when nothing was sent: no live process holds
            the lease (the task is not running, or its process died and the takeover scan has
            not ended the lease yet).
        """
        metadata = None if request.metadata is None else json.dumps(request.metadata)
        row = await self._pool.fetchrow(
            self._request_sql,
            request.task_id,
            self._lease_now(),
            self._target.cancel_channel,
            request.id,
            request.asker,
            metadata,
        )
        return None if row is None else str(row[0])

    async def poll_cancels(self) -> builtins.list[CancelRequest]:
        """Take the cancel requests sent to this process and give them to the callbacks.

        Returns:
            The requests, oldest first; none are taken while no callback is registered.
        """
        if not self._cancel_callbacks:
            return []
        found = await self._pool.fetch(self._take_sql, self.process_id)
        requests = [
            CancelRequest(str(i), str(t), str(a), None if m is None else json.loads(m))
            for i, t, a, m in found
        ]
        for request in requests:
            for callback in self._cancel_callbacks:
                try:
                    callback(request)
                except Exception:  # one callback's failure must not lose the others' requests
                    log.exception("task store: cancel callback failed for task %s", request.task_id)
        return requests

    async def reply_cancel(self, request: CancelRequest, reply: CancelReply) -> None:
        """Answer a request this process was sent; nothing is written if it has no asker.

        A second reply to one request is ignored while the first one waits to be taken.
        """
        if not request.asker:
            return
        error = None if reply.error is None else json.dumps(reply.error)
        await self._pool.execute(
            self._reply_sql,
            request.id,
            request.task_id,
            request.asker,
            reply.outcome,
            error,
            self._lease_now(),
            self._target.cancel_channel,
        )

    async def wait_cancel_reply(self, request_id: str, *, timeout: float) -> CancelReply | None:
        """Take the reply to a request this process sent, waiting ``timeout`` seconds at most.

        Woken by the reply's notification; a lost one costs ``poll_interval`` at most.

        Returns:
            The reply (deleted from the table as it is taken), or ``None`` after ``timeout``.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        due = self._replies_due[request_id] = asyncio.Event()
        try:
            while True:
                due.clear()  # before looking, so that a reply committed after it is not missed
                row = await self._pool.fetchrow(self._take_reply_sql, request_id)
                if row is not None:
                    outcome, error = row
                    return CancelReply(outcome, None if error is None else json.loads(error))
                left = deadline - loop.time()
                if left <= 0:
                    return None
                await wait_set(due, min(left, self._poll))
        finally:
            self._replies_due.pop(request_id, None)

    def _cancel_notified(self, payload: str) -> None:
        """A notification on the cancel channel (from the listener)."""
        if payload == self.process_id:
            self._cancel_due.set()
        elif payload.startswith(_REPLY_MARK):
            due = self._replies_due.get(payload[len(_REPLY_MARK) :])
            if due is not None:
                due.set()

    def _gap(self) -> None:
        """Notifications may have been lost (from the listener): wake readers, look for requests."""
        self._waiters.wake_all()
        self._cancel_due.set()
        for due in self._replies_due.values():
            due.set()

    def _start_keeper(self) -> None:
        self._keeper = asyncio.create_task(self._keep(), name=f"a2a-keeper-{self.process_id}")
        if self._heartbeat_seconds is not None:  # the keeper beats: fence if the beats fail
            self._fence.start(asyncio.get_running_loop().time())

    async def _stop_keeper(self) -> None:
        self._fence.stop()
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
            await wait_set(self._cancel_due, wait)
            self._cancel_due.clear()
            if period is not None and loop.time() >= beat_at:  # first: the leases depend on it
                beat_at = loop.time() + period
                await self._keep_step(self._beat)
            await self._keep_step(self.poll_cancels)

    async def _beat(self) -> None:
        await self.heartbeat()
        await self.take_over()

    async def _keep_step(self, step: Callable[[], Awaitable[object]]) -> None:
        try:
            await step()
        except StoreUnavailableError:
            pass  # the store's outage log said so, once for the outage
        except Exception as exc:  # outermost boundary of a background task: keep going
            log.warning("task store: keeper step failed (%s); trying again", exc)
