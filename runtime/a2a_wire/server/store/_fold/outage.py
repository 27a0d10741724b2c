"""One warning per outage of a store's database, not a traceback per call, and not a pair per flap.

A backend keeps one :class:`OutageLog` and tells it of each call that failed for a fault of the
database (:meth:`OutageLog.failed`, which also makes the :class:`StoreUnavailableError` to
raise) and of each call that succeeded (:meth:`OutageLog.ok`). The first failure logs one
warning naming the fault's type (never a DSN or a statement). The outage ends at the first
success that comes ``quiet_seconds`` or more after its last failure: a table locked by another
session fails the calls on it while others (a heartbeat, a ping of another table) succeed, and
without the quiet period every such success would end the outage and the next failure begin
a new one. The end logs one warning: how long the outage lasted (from its first failure to the
first success after its last one) and how many calls failed in it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from a2a_wire.server.store._contract.errors import StoreUnavailableError

__all__ = ["OutageLog"]

log = logging.getLogger("a2a_wire.server.store")


class OutageLog:
    """The up/down state of one store's database, as its calls see it.

    Args:
        what: The store as the log names it, e.g. ``"PostgreSQL"``.
        retry_after: Seconds a caller is told to wait (``Retry-After``).
        clock: Monotonic seconds.
        quiet_seconds: How long after an outage's last failure a success must come to end it
            (0: the first success after a failure ends it).

    Raises:
        ValueError: ``quiet_seconds`` is negative.
    """

    def __init__(
        self,
        what: str,
        *,
        retry_after: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        quiet_seconds: float = 0.0,
    ) -> None:
        if not quiet_seconds >= 0:
            raise ValueError("quiet_seconds must not be negative")
        self.what = what
        self.retry_after = retry_after
        self.quiet_seconds = quiet_seconds
        self._clock = clock
        self._down_since: float | None = None
        self._last_failure = 0.0
        self._first_success: float | None = None  # since the last failure
        self._failures = 0

    @property
    def down(self) -> bool:
        """Whether an outage has begun and not ended (see the module docstring)."""
        return self._down_since is not None

    def failed(self, exc: BaseException, *, unwritten: bool = False) -> StoreUnavailableError:
        """Note a call that failed for ``exc``; the error to raise in its place (``from exc``).

        ``unwritten``: the call certainly wrote nothing (see :class:`StoreUnavailableError`).
        """
        now = self._clock()
        if self._down_since is None:
            self._down_since, self._failures = now, 0
            log.warning(
                "%s is unavailable (%s); calls answer 503 until it is back",
                self.what,
                type(exc).__name__,
            )
        self._last_failure, self._first_success = now, None
        self._failures += 1
        return StoreUnavailableError(
            f"The task store ({self.what}) is unavailable; retry later",
            retry_after=self.retry_after,
            unwritten=unwritten,
        )

    def ok(self) -> None:
        """Note a call that succeeded."""
        if self._down_since is None:
            return
        now = self._clock()
        if self._first_success is None:
            self._first_success = now
        if now - self._last_failure < self.quiet_seconds:
            return
        lasted = self._first_success - self._down_since
        failures, self._down_since = self._failures, None
        log.warning(
            "%s is available again after %.1f s; %d %s failed",
            self.what,
            lasted,
            failures,
            "call" if failures == 1 else "calls",
        )
