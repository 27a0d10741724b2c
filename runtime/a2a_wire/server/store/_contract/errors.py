"""The store cannot be reached: the one error every backend raises for a fault of its database.

A store call that fails because the database is down, restarting, stalled past its deadline,
locked by another program or out of disk raises :class:`StoreUnavailableError`, whatever the
driver's own exception was (it is kept as ``__cause__``). Callers treat it as retryable: the
server answers HTTP 503 with ``Retry-After`` (a JSON-RPC -32000 error whose ErrorInfo reason is
``STORE_UNAVAILABLE``), and the runtime retries what it must record. Bugs (a wrong statement, a
broken invariant) are not translated: they stay internal errors.
"""

from __future__ import annotations

from a2a_wire.errors import UnavailableError

__all__ = ["StoreUnavailableError", "describe"]


class StoreUnavailableError(UnavailableError):
    """The task store cannot be reached now (database down, stalled, locked or full).

    Args:
        message: What failed, without secrets (no DSN, no statement text).
        retry_after: Seconds the caller should wait before trying again (at least 1).
        metadata: More ErrorInfo pairs, e.g. ``{"taskId": ...}`` for a stream it ends.
        unwritten: The call certainly wrote nothing (it failed before reaching the database),
            so trying a write again cannot write it twice. ``False`` when that is not known
            (e.g. a statement that was sent and then timed out).
    """

    default_message = "The task store is unavailable; retry later"
    reason = "STORE_UNAVAILABLE"

    def __init__(
        self,
        message: str | None = None,
        *,
        retry_after: float = 1.0,
        metadata: dict[str, str] | None = None,
        unwritten: bool = False,
    ) -> None:
        super().__init__(message, retry_after=retry_after, metadata=metadata)
        self.unwritten = unwritten


def describe(exc: BaseException) -> str:
    """``exc`` for a message: its type's name, and its text when it has one (a timeout has none)."""
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
