"""Storage of push configs and of the delivery outbox: the :class:`PushStore` protocol.

Outbox rows are written in the same write as the event that causes them, and a lane (one task's
rows for one config) is delivered one row at a time, in order; :class:`PushClaims` is the
extra part of a store whose outbox several processes share. See docs/internals/store.md,
"Push configs and the outbox".
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from a2a_wire.types import TaskPushNotificationConfig

__all__ = ["Delivery", "LaneKey", "PushClaims", "PushStore"]

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

    async def outbox_backlog(self) -> tuple[int, float | None]:
        """How many rows are neither delivered nor given up, and when the oldest was stored.

        Returns:
            The count, and the oldest row's ``created_at`` (``None`` when there are none).
        """
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
