"""One warning per outage of a store's database, not a traceback per call.

A backend keeps one :class:`OutageLog` and tells it of each call that failed for a fault of the
database (:meth:`OutageLog.failed`, which also makes the :class:`StoreUnavailableError` to
raise) and of each call that succeeded (:meth:`OutageLog.ok`). The first failure after a
success logs one warning naming the fault's type (never a DSN or a statement); the first
success after failures logs how long the outage lasted.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from a2a_wire.server.store._unavailable import StoreUnavailableError

__all__ = ["OutageLog"]

log = logging.getLogger("a2a_wire.server.store")


class OutageLog:
    """The up/down state of one store's database, as its calls see it.

    Args:
        what: The store as the log names it, e.g. ``"PostgreSQL"``.
        retry_after: Seconds a caller is told to wait (``Retry-After``).
        clock: Monotonic seconds.
    """

    def __init__(
        self, what: str, *, retry_after: float = 1.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.what = what
        self.retry_after = retry_after
        self._clock = clock
        self._down_since: float | None = None

    @property
    def down(self) -> bool:
        """Whether the last call that reached a verdict failed."""
        return self._down_since is not None

    def failed(self, exc: BaseException, *, unwritten: bool = False) -> StoreUnavailableError:
        """Note a call that failed for ``exc``; the error to raise in its place (``from exc``).

        ``unwritten``: the call certainly wrote nothing (see :class:`StoreUnavailableError`).
        """
        if self._down_since is None:
            self._down_since = self._clock()
            log.warning(
                "%s is unavailable (%s); calls answer 503 until it is back",
                self.what,
                type(exc).__name__,
            )
        return StoreUnavailableError(
            f"The task store ({self.what}) is unavailable; retry later",
            retry_after=self.retry_after,
            unwritten=unwritten,
        )

    def ok(self) -> None:
        """Note a call that succeeded."""
        if self._down_since is not None:
            lasted = self._clock() - self._down_since
            self._down_since = None
            log.warning("%s is available again after %.1f s", self.what, lasted)
