"""One SQLite task store per file: an advisory lock on a file beside the database.

Recovery on ``open`` fails the tasks a dead process left running, so two stores on one file
would fail each other's live tasks. The claim is a ``flock`` on ``<database>.lock``, held from
``open`` to ``close``, which the operating system gives back when the process dies. It is taken
on a file of its own, never on the database: SQLite's own locks there are POSIX locks, which
closing any other descriptor of the file in this process would release. Other programs that
use the database (a reader, a ``sqlite3`` shell) never take it, so they do not keep a store
from starting. Where ``fcntl`` is missing (Windows), there is no claim.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from pathlib import Path

__all__ = ["CLAIM_POLL_SECONDS", "FileClaim", "claim_path"]

CLAIM_POLL_SECONDS = 0.05
"""How often a store waiting for another store's claim tries again, in seconds."""


def claim_path(database: str | Path) -> Path:
    """The lock file of ``database``."""
    return Path(f"{os.fspath(database)}.lock")


class FileClaim:
    """A held claim on one database file; :meth:`release` gives it back (twice is fine)."""

    def __init__(self, fd: int | None) -> None:
        self._fd = fd

    @classmethod
    async def take(cls, database: str | Path, timeout: float) -> FileClaim:
        """Claim ``database``, waiting up to ``timeout`` seconds for another store to let go.

        Raises:
            RuntimeError: another store holds it still (``from`` the ``BlockingIOError``).
            OSError: the lock file cannot be created or opened.
        """
        if os.fspath(database) == ":memory:":
            return cls(None)  # a database of this connection alone
        try:
            import fcntl
        except ImportError:  # pragma: no cover - no flock on this platform: no claim
            return cls(None)
        fd = os.open(claim_path(database), os.O_RDWR | os.O_CREAT, 0o600)
        deadline = asyncio.get_running_loop().time() + timeout
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    return cls(fd)
                except BlockingIOError as exc:
                    if asyncio.get_running_loop().time() >= deadline:
                        raise RuntimeError(
                            f"task database {database} is in use by another a2a-wire process"
                            f" (or another store in this process), which holds"
                            f" {claim_path(database)}"
                        ) from exc
                await asyncio.sleep(CLAIM_POLL_SECONDS)
        except BaseException:
            os.close(fd)
            raise

    def release(self) -> None:
        """Give the claim back (closing the lock file releases the lock)."""
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)
