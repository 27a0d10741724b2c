"""The state the PostgreSQL store's mixin parts (leases, cancels) share, declared once.

:class:`~._store.PostgresTaskStore` sets every attribute here in its ``__init__`` (the lease
ones through ``_init_leases``) and provides the pool; each part reads them from ``self``.
Reads, retention and push are collaborators instead, given what they need explicitly.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from a2a_wire.server.store.postgresql._connection import GuardedPool
    from a2a_wire.server.store.postgresql._listen import GapWaiters
    from a2a_wire.server.store.postgresql._rows import Head
    from a2a_wire.server.store.postgresql._writes import Target

__all__ = ["StoreState"]


class StoreState:
    """Attributes of the store its mixin parts use.

    Attributes:
        process_id: This store's id in leases and claims.
        _schema: The schema's name (checked).
        _target: The statements and notification channels of the schema.
        _history_limit: Most messages a task keeps.
        _clock: Seconds since the epoch, for state-change times.
        _heads: The heads the store remembers, least recently used first.
        _waiters: The readers waiting for events, woken by the listener.
        _poll: Seconds between a waiting reader's (and the keeper's) checks.
        _lease_seconds: How long a lease or claim lasts after its renewal.
        _lease_clock: The lease clock; ``None`` for the database server's.
        _held: The tasks whose leases this store holds.
    """

    process_id: str
    _schema: str
    _target: Target
    _history_limit: int | None
    _clock: Callable[[], float]
    _heads: OrderedDict[str, Head]
    _waiters: GapWaiters
    _poll: float
    _lease_seconds: float
    _lease_clock: Callable[[], float] | None
    _held: set[str]

    @property
    def _pool(self) -> GuardedPool:
        raise NotImplementedError  # pragma: no cover - provided by the task store
