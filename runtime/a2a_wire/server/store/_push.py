"""Storage of push configs and of the delivery outbox: the :class:`PushStore` protocol.

Every :class:`~a2a_wire.server.store._log.EventLogStore` is also a :class:`PushStore`; the
in-memory store gets its part from :class:`InMemoryPushStore` (here), the SQLite store from
:mod:`a2a_wire.server.store._push_sqlite`. ``tests/server/store/test_push_store.py`` runs one
suite on every backend.

Theory of operation
-------------------
**Configs** (spec 3.1.7-3.1.10) are stored per task under ``(task_id, id)``, as their JSON, with a
position that keeps the order they were first created in (re-creating an id replaces the config
in place). They stay until deleted; deleting one also drops its undelivered and failed rows.

**Outbox.** A delivery is one event for one config: the StreamResponse bytes, plus its attempt
count, when to try next, the last error and whether it was given up. The task store's ``create``
and ``append`` take ``push=True`` and, *in the same write* as the events (one SQLite
transaction; one synchronous step in memory), add a row per streamed event for every config the
task has then. So
an event that was acknowledged to anybody (stream, SendMessage answer) is already in the outbox,
and a config created or deleted concurrently either gets the whole event or none of it. Both
report how many rows they added, so the caller wakes the worker only when there is work. A
deleted task's configs go at once; its rows no later than the store's ``purge``.

Rows get a sequence number that only grows (it is never reused, even after deletions), which
gives each *lane*, the rows of one ``(task_id, config_id)``, its order. The worker asks for the
lanes that gained rows after the last number it saw (:meth:`PushStore.pending_lanes`), and sends
each lane one row at a time (:meth:`PushStore.next_delivery`): a row leaves the lane only when
delivered (deleted) or given up (kept, marked failed), which is what keeps events of one task in
order at each webhook.

**Claims** are an optional capability (:class:`PushClaims`) of a store whose outbox several
processes share (PostgreSQL): a process *claims* due lane heads, so that each row is attempted
by one process at a time and a lane's next row waits until its head left the lane, and a dead
process's claims expire so that another process goes on with them. The delivery worker reads
such a store by claims and any other by lanes.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from a2a_wire import codec
from a2a_wire.types import TaskPushNotificationConfig

__all__ = ["Delivery", "InMemoryPushStore", "LaneKey", "PushClaims", "PushStore"]

LaneKey = tuple[str, str]
"""``(task_id, config_id)``: the rows of one lane are delivered one at a time, in order."""


@dataclass(frozen=True, slots=True)
class Delivery:
    """One event to POST to one webhook.

    Attributes:
        seq: Position in the outbox; lower goes first within a lane.
        delivery_id: Opaque id, the same on every attempt (sent as ``X-A2A-Delivery-Id``).
        config: The webhook's config as stored now (``task_id`` and ``id`` name the lane).
        body: The StreamResponse JSON.
        created_at: When the event was stored (seconds since the epoch).
        attempts: Attempts made so far.
        next_attempt_at: Not to be sent before this time (seconds since the epoch).
        last_error: Why the last attempt failed; ``""`` before the first.
        failed: Given up; kept as a record only.
    """

    seq: int
    delivery_id: str
    config: TaskPushNotificationConfig
    body: bytes
    created_at: float
    attempts: int = 0
    next_attempt_at: float = 0.0
    last_error: str = ""
    failed: bool = False

    @property
    def lane(self) -> LaneKey:
        """The ``(task_id, config_id)`` this delivery belongs to."""
        return self.config.task_id, self.config.id


class PushStore(Protocol):
    """Push configs and the outbox; see the module docstring for the rules."""

    async def put_push_config(
        self, config: TaskPushNotificationConfig, *, limit: int | None = None
    ) -> bool:
        """Store a config under ``(config.task_id, config.id)``, replacing one with that id.

        With ``limit``, a new config is stored only while the task has fewer than ``limit``
        others (a replacement always is), checked and written atomically, also against other
        processes on a shared store (``PushSettings.max_configs_per_task``).

        Returns:
            Whether it was stored.
        """
        ...

    async def get_push_config(
        self, task_id: str, config_id: str
    ) -> TaskPushNotificationConfig | None:
        """The config, or ``None``."""
        ...

    async def list_push_configs(self, task_id: str) -> list[tuple[int, TaskPushNotificationConfig]]:
        """Every config of the task with its position, in creation order."""
        ...

    async def delete_push_config(self, task_id: str, config_id: str) -> bool:
        """Remove a config and its outbox rows; ``False`` if there was none."""
        ...

    async def pending_lanes(self, after_seq: int) -> tuple[list[LaneKey], int]:
        """Lanes with undelivered rows numbered above ``after_seq``, and the highest such number.

        The number returned is ``after_seq`` when there are none.
        """
        ...

    async def next_delivery(self, task_id: str, config_id: str) -> Delivery | None:
        """The first undelivered row of a lane (its config still stored), or ``None``."""
        ...

    async def delivery_done(self, seq: int) -> None:
        """Remove a delivered row (no-op if it is gone)."""
        ...

    async def delivery_retry(
        self, seq: int, *, attempts: int, next_attempt_at: float, error: str
    ) -> None:
        """Record a failed attempt to be retried at ``next_attempt_at``."""
        ...

    async def delivery_failed(self, seq: int, *, attempts: int, error: str) -> None:
        """Record that a row was given up; it leaves its lane but stays as a record."""
        ...

    async def failed_deliveries(self, task_id: str) -> list[Delivery]:
        """The given-up rows of a task, oldest first."""
        ...


@runtime_checkable
class PushClaims(Protocol):
    """Claims on outbox rows, for a store whose outbox several processes deliver (see above).

    A claim lasts the store's lease (renewed while its process lives) and ends with
    ``delivery_done``, ``delivery_retry``, :meth:`delivery_retry_in`, ``delivery_failed`` or
    :meth:`release_delivery`; all but the first leave a row alone that another process claimed
    meanwhile.
    """

    async def claim_deliveries(
        self, limit: int, *, holding: Collection[int] | None = None
    ) -> list[Delivery]:
        """Claim up to ``limit`` due lane heads, none claimed elsewhere; lowest number first.

        A head is the lowest-numbered row of its lane neither delivered nor given up; it is
        due when its ``next_attempt_at`` has passed by the store's clock. ``holding``, when
        given, names the rows this process is delivering (by ``seq``); any other row claimed
        by this process is then free to claim again (a claim whose answer was lost would
        otherwise be renewed for as long as the process lives).

        Raises:
            ValueError: ``limit`` is below 1.
        """
        ...

    async def delivery_retry_in(self, seq: int, *, attempts: int, delay: float, error: str) -> None:
        """Record a failed attempt, due again ``delay`` seconds from now by the store's clock.

        The clock is the one claims are judged by, shared by every process; otherwise as
        ``delivery_retry`` (the claim ends).
        """
        ...

    async def release_delivery(self, seq: int) -> None:
        """End this process's claim on a row without recording an attempt."""
        ...


@dataclass(slots=True)
class _Row:
    delivery_id: str
    task_id: str
    config_id: str
    body: bytes
    created_at: float
    attempts: int = 0
    next_attempt_at: float = 0.0
    last_error: str = ""
    failed: bool = False


class InMemoryPushStore(PushStore):
    """The :class:`PushStore` part of :class:`~a2a_wire.server.store._log_memory.InMemoryTaskStore`.

    The task store calls :meth:`_init_push` from its constructor and :meth:`_enqueue_push` (and
    :meth:`_put_configs`) inside ``create``/``append``, with no ``await`` in between, which is
    what makes the outbox rows part of the same write.
    """

    _push_configs: dict[str, dict[str, tuple[int, bytes]]]
    _outbox: dict[int, _Row]
    _lanes: dict[LaneKey, dict[int, None]]
    _last_seq: int
    _last_position: int

    def _init_push(self) -> None:
        self._push_configs = {}
        self._outbox = {}
        self._lanes = {}
        self._last_seq = 0
        self._last_position = 0

    def _put_configs(self, configs: Sequence[TaskPushNotificationConfig]) -> None:
        for config in configs:
            by_id = self._push_configs.setdefault(config.task_id, {})
            old = by_id.get(config.id)
            if old is None:
                self._last_position += 1
            position = old[0] if old is not None else self._last_position
            by_id[config.id] = (position, codec.encode(config))

    def _enqueue_push(self, task_id: str, body: bytes | None) -> int:
        if body is None:
            return 0
        configs = self._push_configs.get(task_id, {})
        now = time.time()
        for config_id, _ in sorted(configs.items(), key=lambda item: item[1][0]):
            self._last_seq += 1
            self._outbox[self._last_seq] = _Row(uuid.uuid4().hex, task_id, config_id, body, now)
            self._lanes.setdefault((task_id, config_id), {})[self._last_seq] = None
        return len(configs)

    def _drop(self, seq: int) -> _Row | None:
        row = self._outbox.get(seq)
        if row is not None:
            lane = self._lanes.get((row.task_id, row.config_id), {})
            lane.pop(seq, None)
            if not lane:
                self._lanes.pop((row.task_id, row.config_id), None)
        return row

    async def put_push_config(
        self, config: TaskPushNotificationConfig, *, limit: int | None = None
    ) -> bool:
        """Store a config, replacing one with the same task and id, within ``limit``."""
        others = [i for i in self._push_configs.get(config.task_id, {}) if i != config.id]
        if limit is not None and len(others) >= limit:
            return False
        self._put_configs([config])
        return True

    async def get_push_config(
        self, task_id: str, config_id: str
    ) -> TaskPushNotificationConfig | None:
        """The config, or ``None``."""
        found = self._push_configs.get(task_id, {}).get(config_id)
        return None if found is None else codec.decode(TaskPushNotificationConfig, found[1])

    async def list_push_configs(self, task_id: str) -> list[tuple[int, TaskPushNotificationConfig]]:
        """The task's configs with their positions, in creation order."""
        rows = sorted(self._push_configs.get(task_id, {}).values())
        return [(pos, codec.decode(TaskPushNotificationConfig, body)) for pos, body in rows]

    async def delete_push_config(self, task_id: str, config_id: str) -> bool:
        """Remove a config and all its outbox rows."""
        configs = self._push_configs.get(task_id, {})
        if configs.pop(config_id, None) is None:
            return False
        if not configs:
            del self._push_configs[task_id]
        self._lanes.pop((task_id, config_id), None)
        doomed = [
            seq
            for seq, row in self._outbox.items()
            if row.task_id == task_id and row.config_id == config_id
        ]
        for seq in doomed:  # undelivered and failed rows alike
            del self._outbox[seq]
        return True

    async def pending_lanes(self, after_seq: int) -> tuple[list[LaneKey], int]:
        """Lanes with rows above ``after_seq``."""
        found = [key for key, seqs in self._lanes.items() if next(reversed(seqs)) > after_seq]
        return found, max(after_seq, self._last_seq)

    async def next_delivery(self, task_id: str, config_id: str) -> Delivery | None:
        """The lane's first undelivered row."""
        seqs = self._lanes.get((task_id, config_id))
        stored = self._push_configs.get(task_id, {}).get(config_id)
        if not seqs or stored is None:
            return None
        seq = next(iter(seqs))
        config = codec.decode(TaskPushNotificationConfig, stored[1])
        return _delivery(seq, self._outbox[seq], config)

    async def delivery_done(self, seq: int) -> None:
        """Remove a delivered row."""
        if self._drop(seq) is not None:
            del self._outbox[seq]

    async def delivery_retry(
        self, seq: int, *, attempts: int, next_attempt_at: float, error: str
    ) -> None:
        """Record a failed attempt."""
        row = self._outbox.get(seq)
        if row is not None:
            row.attempts, row.next_attempt_at, row.last_error = attempts, next_attempt_at, error

    async def delivery_failed(self, seq: int, *, attempts: int, error: str) -> None:
        """Mark a row given up."""
        row = self._drop(seq)
        if row is not None:
            row.attempts, row.last_error, row.failed = attempts, error, True

    async def failed_deliveries(self, task_id: str) -> list[Delivery]:
        """The task's given-up rows."""
        out = []
        for seq, row in self._outbox.items():
            if row.failed and row.task_id == task_id:
                config = await self.get_push_config(task_id, row.config_id)
                assert config is not None  # deleting a config drops its rows
                out.append(_delivery(seq, row, config))
        return out


def _delivery(seq: int, row: _Row, config: TaskPushNotificationConfig) -> Delivery:
    return Delivery(
        seq=seq,
        delivery_id=row.delivery_id,
        config=config,
        body=row.body,
        created_at=row.created_at,
        attempts=row.attempts,
        next_attempt_at=row.next_attempt_at,
        last_error=row.last_error,
        failed=row.failed,
    )
