"""How long the server's task store calls take, by operation (``a2a.server.store.duration``).

One place times every backend: when a meter provider is found as the application starts, each
operation of :data:`OPERATIONS` the store has is shadowed on the store object by a timed call
of the store's own method (an instance attribute), and the shadows are removed when the store
closes. With metrics off, or without ``opentelemetry-api``, the store is not touched and its
calls cost nothing more. A store's calls to itself under these names (the PostgreSQL keeper's
heartbeat and takeover scan) are timed too; ``wait_events``, a long poll, is not.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from a2a_wire.telemetry._names import ERROR_TYPE, STORE_OPERATION, error_type

if TYPE_CHECKING:
    from opentelemetry.metrics import Histogram

    from a2a_wire.telemetry._metrics import Instruments

__all__ = ["OPERATIONS", "StoreTiming"]

OPERATIONS = (
    "create",
    "append",
    "get",
    "snapshot",
    "list",
    "read_events",
    "ping",
    "compact",
    "expired",
    "delete_task",
    "purge",
    "put_push_config",
    "get_push_config",
    "list_push_configs",
    "delete_push_config",
    "pending_lanes",
    "next_delivery",
    "claim_deliveries",
    "delivery_done",
    "delivery_retry",
    "delivery_retry_in",
    "delivery_failed",
    "release_delivery",
    "outbox_backlog",
    "acquire",
    "release",
    "lease_holder",
    "request_cancel",
    "reply_cancel",
    "heartbeat",
    "take_over",
)
"""The ``a2a.store.operation`` values: the store's methods of these names are timed."""


def _timed(
    method: Callable[..., Awaitable[Any]], histogram: Histogram, operation: str
) -> Callable[..., Awaitable[Any]]:
    done = {STORE_OPERATION: operation}

    @functools.wraps(method)
    async def call(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            answer = await method(*args, **kwargs)
        except Exception as exc:  # measured, then raised as it was
            failed = {STORE_OPERATION: operation, ERROR_TYPE: error_type(exc)}
            histogram.record(time.perf_counter() - start, failed)
            raise
        histogram.record(time.perf_counter() - start, done)
        return answer

    return call


class StoreTiming:
    """The timed operations of one store, in place until :meth:`remove`.

    Args:
        store: The store; its methods named in :data:`OPERATIONS` are shadowed.
        histogram: Where the durations go.
    """

    def __init__(self, store: object, histogram: Histogram) -> None:
        self._store = store
        self._names = [name for name in OPERATIONS if callable(getattr(store, name, None))]
        for name in self._names:
            setattr(store, name, _timed(getattr(store, name), histogram, name))

    @classmethod
    def install(cls, store: object, instruments: Instruments | None) -> StoreTiming | None:
        """Time ``store``'s calls when metrics are on, unless another app already does."""
        if instruments is None or not hasattr(store, "__dict__") or "get" in vars(store):
            return None
        return cls(store, instruments.store_duration)

    def remove(self) -> None:
        """Give the store its own methods back."""
        for name in self._names:
            vars(self._store).pop(name, None)
        self._names = []
