"""Faults of the SQLite store's environment, told apart from bugs, at one point.

Every call of the store onto its connection's thread (a read's hop, a write's group commit) goes
through :meth:`SQLiteFaults.guard`. An :class:`sqlite3.Error` whose primary result code says the
environment failed (:data:`FAULT_CODES`: the file locked by another program past
``busy_timeout``, the disk or quota full, an I/O error, the file or its directory made
read-only, or no longer openable) is raised as
:class:`~a2a_wire.server.store.StoreUnavailableError` ``from`` it, and logged once per outage
(:class:`~a2a_wire.server.store._fold.outage.OutageLog`). Any other sqlite error (a constraint, a
wrong statement: a bug, or a rule the store handles itself) is raised unchanged. The open of the
file is not guarded: a file that cannot be opened stops the start with the driver's error.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable
from typing import TypeVar

from a2a_wire.server.store._fold.outage import OutageLog

__all__ = ["FAULT_CODES", "SQLiteFaults", "is_fault"]

T = TypeVar("T")

FAULT_CODES = frozenset(
    {
        sqlite3.SQLITE_BUSY,  # "database is locked": another program holds the file
        sqlite3.SQLITE_FULL,  # "database or disk is full"
        sqlite3.SQLITE_IOERR,
        sqlite3.SQLITE_READONLY,
        sqlite3.SQLITE_CANTOPEN,
    }
)
"""Primary SQLite result codes that are faults of the environment, not of the code."""


def is_fault(exc: BaseException) -> bool:
    """Whether ``exc`` is an sqlite error of :data:`FAULT_CODES` (extended codes included)."""
    code = getattr(exc, "sqlite_errorcode", None) if isinstance(exc, sqlite3.Error) else None
    return isinstance(code, int) and (code & 0xFF) in FAULT_CODES


class SQLiteFaults:
    """The translation point of one SQLite store (module docstring).

    Args:
        outages: The store's outage log (``OutageLog("SQLite")`` when omitted).
    """

    def __init__(self, outages: OutageLog | None = None) -> None:
        self.outages = outages or OutageLog("SQLite")

    async def guard(self, call: Awaitable[T]) -> T:
        """Await ``call``, one hop or group commit of the store.

        Raises:
            StoreUnavailableError: it failed for a fault of the environment (``from`` it).
            Exception: whatever else it raised, unchanged.
        """
        try:
            result = await call
        except sqlite3.Error as exc:
            if not is_fault(exc):
                raise
            raise self.outages.failed(exc) from exc
        self.outages.ok()
        return result
