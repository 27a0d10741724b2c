"""The PostgreSQL store's connection to its database: deadlines, and the one place faults are translated.

Every statement of the store runs through :class:`GuardedPool`, which bounds it and turns a
fault of the database into :class:`~a2a_wire.server.store.StoreUnavailableError` (``from`` the
driver's exception, told to the store's :class:`~a2a_wire.server.store._fold.outage.OutageLog`, which logs one warning
per outage). What counts as a fault is :func:`is_outage`: the connection refused, reset or
closed, the server shutting down or refusing connections, out of resources, a deadline of ours
passed, a statement cancelled by ``statement_timeout`` or a lock not granted within
``lock_timeout``. Every other error (a wrong
statement, a constraint meant as logic) passes through as it is. A connection that failed for
a fault is terminated, not given back to the pool: its state is unknown.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeAlias

from a2a_wire.server.store._contract.errors import StoreUnavailableError
from a2a_wire.server.store._fold.outage import OutageLog

if TYPE_CHECKING:
    import asyncpg
    from asyncpg.pool import PoolConnectionProxy

    Conn: TypeAlias = asyncpg.Connection | PoolConnectionProxy
    """A connection of its own or one lent by the pool."""
    Queryable: TypeAlias = "Conn | GuardedPool"
    """Where a single statement can run."""

__all__ = [
    "ACQUIRE_TIMEOUT",
    "CONNECT_TIMEOUT",
    "MIGRATION_LOCK_TIMEOUT",
    "STATEMENT_TIMEOUT",
    "Deadlines",
    "GuardedPool",
    "close_within",
    "is_outage",
    "load_driver",
    "open_pool",
    "start_hint",
    "translated",
]


def load_driver() -> ModuleType:
    """Import asyncpg, the optional driver (the ``postgresql`` extra).

    Raises:
        RuntimeError: asyncpg is not installed.
    """
    try:
        import asyncpg
    except ImportError as exc:
        raise RuntimeError(
            'the PostgreSQL store needs asyncpg: pip install "a2a-wire[postgresql]"'
        ) from exc
    return asyncpg


CONNECT_TIMEOUT = 5.0
"""Default seconds a new connection (of the pool or the listener) may take, handshake included."""

STATEMENT_TIMEOUT = 5.0
"""Default seconds one statement may take, on the server (``statement_timeout``) and here."""

ACQUIRE_TIMEOUT = 5.0
"""Default seconds a call waits for a connection of the pool (a new one included)."""

MIGRATION_LOCK_TIMEOUT = 10.0
"""Default seconds the schema check at ``open`` (and ``db migrate``) waits for each lock: the
migration lock of another process that is upgrading the schema, a table another session locked."""


@dataclass(frozen=True, slots=True)
class Deadlines:
    """The store's deadlines, in seconds (each above 0).

    Raises:
        ValueError: a deadline is not above 0.
    """

    connect: float = CONNECT_TIMEOUT
    statement: float = STATEMENT_TIMEOUT
    acquire: float = ACQUIRE_TIMEOUT
    migration_lock: float = MIGRATION_LOCK_TIMEOUT

    def __post_init__(self) -> None:
        if not min(self.connect, self.statement, self.acquire, self.migration_lock) > 0:
            raise ValueError("connect, statement, acquire and lock timeouts must be above 0")

    def connect_options(self) -> dict[str, Any]:
        """Asyncpg's ``connect`` options that apply these deadlines to a connection."""
        return {
            "timeout": self.connect,
            "command_timeout": self.statement,
            "server_settings": {"statement_timeout": str(max(1, round(self.statement * 1000)))},
        }


def start_hint(exc: BaseException, waited: str, schema: str, deadlines: Deadlines) -> str:
    """What the operator can do about ``exc``, a fault that stopped the store's ``open``.

    Args:
        exc: The driver's exception.
        waited: The deadline that ran out, as the configuration names it, with its value.
        schema: The store's schema.
        deadlines: The store's deadlines (for a lock wait's).
    """
    if isinstance(exc, load_driver().LockNotAvailableError):
        waited = f"[postgresql] migration_lock_timeout_seconds ({deadlines.migration_lock:g} s)"
        return (
            f"waited {waited} for a lock on schema {schema!r} that another session holds"
            " (another process migrating it, a LOCK TABLE, a long transaction: see pg_locks);"
            " end that session, or raise the setting"
        )
    if not isinstance(exc, TimeoutError):  # refused, reset, shutting down: no deadline ran out
        return "check that PostgreSQL runs and accepts connections, and that this host reaches it"
    return (
        f"waited {waited}; check that PostgreSQL runs and answers, that this host reaches it,"
        f" and that no other session holds a lock on a table of schema {schema!r} (pg_locks)"
    )


def is_outage(exc: BaseException, conn: Conn | None = None) -> bool:
    """Whether ``exc`` is a fault of the database rather than of the statement.

    Args:
        exc: What a call raised.
        conn: The connection it ran on, if one was at hand: an ``InterfaceError`` counts as a
            fault only when that connection is closed, and asyncpg's ``InternalClientError``
            (a protocol state broken by a session the server ended, e.g. on shutdown) only
            with a connection.
    """
    driver = load_driver()
    faults = (
        OSError,  # refused, reset, unreachable
        TimeoutError,  # a deadline of ours
        driver.PostgresConnectionError,  # class 08: the connection does not exist, failed
        driver.OperatorInterventionError,  # class 57: shutting down, cannot connect now, canceled
        driver.InsufficientResourcesError,  # class 53: disk full, too many connections
        driver.PostgresSystemError,  # class 58: I/O error on the server
        driver.LockNotAvailableError,  # 55P03: a lock wait passed lock_timeout (another session)
    )
    if isinstance(exc, faults):
        return True
    if conn is None:
        return False
    if isinstance(exc, driver.InternalClientError):
        return True  # the connection's protocol state broke: the server ended the session under it
    return isinstance(exc, driver.InterfaceError) and conn.is_closed()


@contextlib.contextmanager
def translated(
    outage: OutageLog, conn: Conn | None = None, *, answered: bool = True, unwritten: bool = False
) -> Iterator[None]:
    """Raise a fault of the database inside as ``StoreUnavailableError``; note successes.

    Args:
        outage: The store's outage log, told of each fault and each success.
        conn: The connection the block uses, if any (see :func:`is_outage`).
        answered: Whether the block's success shows the database answered (taking an idle
            connection from the pool does not).
        unwritten: A fault inside certainly wrote nothing (the block sends no statement).

    Raises:
        StoreUnavailableError: the block raised a fault of the database (``from`` it).
    """
    try:
        yield
    except StoreUnavailableError:
        raise  # translated already, by a call inside
    except Exception as exc:
        if is_outage(exc, conn):
            raise outage.failed(exc, unwritten=unwritten) from exc
        if answered:
            outage.ok()  # the database answered, with an error
        raise
    if answered:
        outage.ok()


class GuardedPool:
    """An asyncpg pool whose every use is bounded and translated (see the module docstring).

    Args:
        pool: The pool, made with :meth:`Deadlines.connect_options`.
        deadlines: Its deadlines.
        outage: Where faults and successes are told.
    """

    def __init__(self, pool: asyncpg.Pool, deadlines: Deadlines, outage: OutageLog) -> None:
        self.raw = pool
        self.deadlines = deadlines
        self.outage = outage

    def translated(
        self, conn: Conn | None = None, *, answered: bool = True, unwritten: bool = False
    ) -> contextlib.AbstractContextManager[None]:
        """:func:`translated` with this pool's outage log."""
        return translated(self.outage, conn, answered=answered, unwritten=unwritten)

    @contextlib.asynccontextmanager
    async def acquire(
        self, *, timeout: float | None = None
    ) -> AsyncIterator[PoolConnectionProxy[Any]]:
        """A connection of the pool for the block, the wait and the block bounded together.

        ``timeout``: seconds for both (default: the statement deadline); the wait alone takes at
        most the acquire deadline.

        Raises:
            StoreUnavailableError: no connection in time (``unwritten``: nothing was sent), the
                block ran past the deadline, or it failed for a fault.
        """
        budget = self.deadlines.statement if timeout is None else timeout
        deadline = asyncio.get_running_loop().time() + budget
        with self.translated(answered=False, unwritten=True):
            conn = await self.raw.acquire(timeout=min(budget, self.deadlines.acquire))
        try:
            with self.translated(conn):
                async with asyncio.timeout_at(deadline):
                    yield conn
        except (StoreUnavailableError, asyncio.CancelledError):
            # A fault, or cancelled mid-statement: the connection's state is unknown.
            with contextlib.suppress(load_driver().InterfaceError):  # already let go when closed
                conn.terminate()
            with contextlib.suppress(Exception):
                await self.raw.release(conn)  # at once: a terminated connection is not reset
            raise
        except BaseException:
            await self._release(conn, deadline)
            raise
        await self._release(conn, deadline)

    async def _release(self, conn: PoolConnectionProxy[Any], deadline: float) -> None:
        """Give ``conn`` back, reset within what is left of the call's deadline.

        The block's answer came already: a reset that fails costs the connection (asyncpg then
        terminates it), never the answer.
        """
        left = max(deadline - asyncio.get_running_loop().time(), 0.001)
        with contextlib.suppress(Exception):
            await self.raw.release(conn, timeout=left)

    async def fetch(self, query: str, *args: object, timeout: float | None = None) -> list[Any]:
        """Rows of one statement (``timeout``: seconds, default the statement deadline)."""
        async with self.acquire(timeout=timeout) as conn:
            return await conn.fetch(query, *args, timeout=timeout)

    async def fetchrow(self, query: str, *args: object, timeout: float | None = None) -> Any:
        """The first row of one statement, or ``None``."""
        async with self.acquire(timeout=timeout) as conn:
            return await conn.fetchrow(query, *args, timeout=timeout)

    async def fetchval(self, query: str, *args: object, timeout: float | None = None) -> Any:
        """The first value of the first row of one statement, or ``None``."""
        async with self.acquire(timeout=timeout) as conn:
            return await conn.fetchval(query, *args, timeout=timeout)

    async def execute(self, query: str, *args: object, timeout: float | None = None) -> str:
        """Run one statement; its status text."""
        async with self.acquire(timeout=timeout) as conn:
            return await conn.execute(query, *args, timeout=timeout)

    async def close(self) -> None:
        """Close the pool, gracefully within the statement deadline, else at once."""
        try:
            async with asyncio.timeout(self.deadlines.statement):
                await self.raw.close()
        except (TimeoutError, OSError, load_driver().InterfaceError):
            self.raw.terminate()


async def open_pool(
    dsn: str,
    size: int,
    *,
    init: Callable[[asyncpg.Connection], Awaitable[None]] | None = None,
    options: Mapping[str, Any] | None = None,
) -> asyncpg.Pool:
    """A pool of at most ``size`` connections to ``dsn`` that skips asyncpg's reset on release.

    ``init`` runs once on each new connection (the text codec of :mod:`._text`);
    ``options`` are asyncpg's ``connect`` options for each (the deadlines of
    :mod:`._connection`). No connection is kept open for its own sake (``min_size=0``):
    asyncpg would restore such a floor in the background during an outage, with a traceback
    in the log at each attempt; idle connections stay in the pool all the same.

    The store sets nothing on its pool's connections that outlives a statement or a transaction
    (no ``SET``, ``LISTEN``, session advisory lock or open cursor: its listening connection is
    outside the pool), so asyncpg's default reset query (advisory unlock, ``CLOSE ALL``,
    ``UNLISTEN *``, ``RESET ALL``) would only cost a round trip at every release, one per
    statement run on the pool. asyncpg still rolls back a transaction left open before it lends
    the connection again.
    """
    pool: asyncpg.Pool = await load_driver().create_pool(
        dsn, min_size=0, max_size=size, reset=_keep_session, init=init, **(options or {})
    )
    return pool


async def _keep_session(conn: asyncpg.Connection) -> None:
    """The pool's reset: nothing to undo (see :func:`open_pool`)."""


async def close_within(conn: asyncpg.Connection, timeout: float) -> None:
    """Close ``conn`` gracefully within ``timeout`` seconds, else drop it."""
    try:
        await conn.close(timeout=timeout)
    except (OSError, TimeoutError, load_driver().InterfaceError):
        conn.terminate()
