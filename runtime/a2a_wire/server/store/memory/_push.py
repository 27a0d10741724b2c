"""The push configs and delivery outbox of the in-memory store: :class:`InMemoryPushStore`.

Rows are numbered by one counter that only grows, and each lane is an insertion-ordered dict of
its row numbers, so the head of a lane is its first key.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from a2a_wire import codec
from a2a_wire.server.store._contract.push import Delivery, LaneKey, PushStore
from a2a_wire.types import TaskPushNotificationConfig

__all__ = ["InMemoryPushStore"]


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
    """The :class:`PushStore` part of :class:`~a2a_wire.server.store.memory._store.InMemoryTaskStore`.

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

    async def outbox_backlog(self) -> tuple[int, float | None]:
        """Rows in lanes, and the oldest lane head's creation time."""
        heads = [self._outbox[next(iter(seqs))].created_at for seqs in self._lanes.values()]
        return sum(map(len, self._lanes.values())), min(heads, default=None)


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
