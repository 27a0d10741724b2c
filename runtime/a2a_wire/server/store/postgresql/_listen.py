"""Waking readers of the PostgreSQL store: ``LISTEN`` on a connection of its own.

A notification only wakes readers, who then read the table: a late or lost one costs latency
and never an event, since waiting readers also poll. See docs/internals/store.md,
"PostgreSQL: waking readers".
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from a2a_wire._aio import wait_set
from a2a_wire.server.store._fold.events import Waiters
from a2a_wire.server.store.postgresql._connection import load_driver
from a2a_wire.server.store.postgresql._text import escape, unescape

if TYPE_CHECKING:
    import asyncpg

__all__ = ["CHECK_SECONDS", "NOTED_TASKS", "GapWaiters", "Listener", "payload"]

log = logging.getLogger("a2a_wire.server.store")

CHECK_SECONDS = 10.0
"""Silence after which the listener checks its connection with a query."""

NOTIFY_ID_LIMIT = 4000
"""Longest task id (UTF-8 bytes) that is notified; PostgreSQL refuses payloads of 8000 bytes."""


def payload(task_id: str, seq: int) -> str | None:
    """The notification for ``task_id`` at ``seq``; ``None`` for an id too long to send."""
    sent = escape(task_id)  # as the pool's text codec sends it (:mod:`._text`)
    return f"{seq} {task_id}" if len(sent.encode()) <= NOTIFY_ID_LIMIT else None


NOTED_TASKS = 4096
"""Most tasks whose last notified number :class:`GapWaiters` remembers (the latest notified)."""


class GapWaiters(Waiters):
    """:class:`~a2a_wire.server.store._fold.events.Waiters` that remember notified numbers and can wake everyone."""

    def __init__(self) -> None:
        super().__init__()
        self._noted: OrderedDict[str, int] = OrderedDict()

    def notified(self, task_id: str, seq: int) -> None:
        """A commit of ``task_id`` up to number ``seq`` was notified (0: deleted or compacted)."""
        if seq > 0:
            self._noted[task_id] = max(seq, self._noted.get(task_id, 0))
            self._noted.move_to_end(task_id)
            if len(self._noted) > NOTED_TASKS:
                self._noted.popitem(last=False)
        else:
            self._noted.pop(task_id, None)  # unknown again: the reader asks the table
        self.wake(task_id)

    def noted(self, task_id: str) -> int | None:
        """The highest number notified for ``task_id`` since the last gap; ``None``: unknown."""
        return self._noted.get(task_id)

    async def wait_after(
        self,
        task_id: str,
        after_seq: int,
        *,
        known: Callable[[], int],
        ask: Callable[[], Awaitable[int | None]],
        timeout: float,
        poll: float,
    ) -> bool:
        """Wait for an event of ``task_id`` above ``after_seq``: a wake, or a poll every ``poll`` s.

        The first check asks the table only when the task's notified number is unknown (a
        commit past it will wake this reader); every poll asks.

        Args:
            task_id: The task.
            after_seq: The last number the reader has.
            known: The last number this process committed to the task (0: none known).
            ask: The table's last number of the task (``None``: the task is gone).
            timeout: Most seconds to wait.
            poll: Seconds between polls.

        Returns:
            ``True`` when woken or the table has such an event, ``False`` after ``timeout``.
        """
        asked = False

        async def ready() -> bool:
            nonlocal asked
            noted = self._noted.get(task_id)
            if max(known(), noted or 0) > after_seq:
                return True
            if not asked and noted is not None:
                asked = True
                return False
            asked = True
            last = await ask()
            return last is None or last > after_seq

        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            left = max(0.0, deadline - loop.time())
            if await self.wait(task_id, ready, min(left, poll)):
                return True
            if loop.time() >= deadline:
                return False

    def wake_all(self) -> None:
        """Release every waiting reader and forget the numbers (notifications were lost)."""
        self._noted.clear()
        for task_id in list(self._futures):
            self.wake(task_id)


class Listener:
    """One ``LISTEN`` connection, held and reconnected; see the module docstring.

    Args:
        dsn: Where PostgreSQL is.
        channel: The channel to listen on.
        on_event: Called with the task id and number of each notification.
        on_gap: Called after a reconnect.
        retry: Seconds between attempts to connect again.
        extra: More channels to listen on, each with the callback of its payloads.
        options: asyncpg's ``connect`` options (the store's deadlines).
    """

    def __init__(
        self,
        dsn: str,
        channel: str,
        *,
        on_event: Callable[[str, int], None],
        on_gap: Callable[[], None],
        retry: float,
        extra: Mapping[str, Callable[[str], None]] | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> None:
        self._dsn = dsn
        self._channel = channel
        self._extra = dict(extra or {})
        self._options = dict(options or {})
        self._on_event = on_event
        self._on_gap = on_gap
        self._retry = retry
        self._conn: asyncpg.Connection | None = None
        self._lost = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.reconnects = 0
        """How many times the connection was made again (tests wait for it)."""

    @property
    def server_pid(self) -> int | None:
        """The PostgreSQL backend process of the connection, while connected."""
        return None if self._conn is None else self._conn.get_server_pid()

    async def start(self) -> None:
        """Connect and listen; a failure here is the caller's (the store does not open)."""
        self._conn = await self._connect()
        self._task = asyncio.create_task(self._watch(), name=f"a2a-listen-{self._channel}")

    async def close(self) -> None:
        """Stop listening and close the connection."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        conn, self._conn = self._conn, None
        if conn is not None:
            await self._drop(conn)

    async def _connect(self) -> asyncpg.Connection:
        conn: asyncpg.Connection = await load_driver().connect(self._dsn, **self._options)
        try:
            conn.add_termination_listener(self._terminated)
            await conn.add_listener(self._channel, self._notified)
            for channel in self._extra:
                await conn.add_listener(channel, self._notified_extra)
        except BaseException:
            await self._drop(conn)
            raise
        self._lost.clear()
        return conn

    async def _drop(self, conn: asyncpg.Connection) -> None:
        conn.remove_termination_listener(self._terminated)
        try:
            async with asyncio.timeout(CHECK_SECONDS):
                await conn.close()
        except (OSError, TimeoutError, load_driver().InterfaceError):
            conn.terminate()

    def _terminated(self, conn: Any) -> None:
        if conn is self._conn:
            self._lost.set()

    def _notified(self, conn: Any, pid: int, channel: str, payload: object) -> None:
        seq, _, task_id = unescape(str(payload)).partition(" ")
        if seq.isdigit() and task_id:
            self._on_event(task_id, int(seq))

    def _notified_extra(self, conn: Any, pid: int, channel: str, payload: object) -> None:
        self._extra[channel](unescape(str(payload)))

    async def _watch(self) -> None:
        while True:
            if not await wait_set(self._lost, CHECK_SECONDS) and await self._alive():
                continue
            await self._reconnect()

    async def _alive(self) -> bool:
        conn = self._conn
        try:
            return conn is not None and await conn.fetchval("SELECT 1", timeout=CHECK_SECONDS) == 1
        except Exception:  # any failure of the check means the same: connect again
            return False

    async def _reconnect(self) -> None:
        old, self._conn = self._conn, None
        if old is not None:
            old.remove_termination_listener(self._terminated)
            old.terminate()
        attempts = 0
        while True:
            try:
                conn = await self._connect()
            except Exception as exc:  # outermost boundary of a background task: keep trying
                level = logging.DEBUG if attempts else logging.WARNING  # once per outage
                log.log(
                    level,
                    "task store: cannot listen for commits (%s); retrying",
                    type(exc).__name__,
                )
                attempts += 1
                await asyncio.sleep(self._retry)
                continue
            break
        self._conn = conn
        self.reconnects += 1
        log.info("task store: listening for commits again")
        self._on_gap()
