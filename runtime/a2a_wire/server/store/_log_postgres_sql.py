"""Schema, migrations and statements of the PostgreSQL event log store (:mod:`._log_postgres`).

The layout and its migration steps are in :mod:`._log_postgres_ddl`.

Migration
---------
:func:`migrate` runs in one transaction holding a transaction-level advisory lock whose key is
derived from the schema's name, so that processes starting together take turns: the first one
creates or upgrades the schema, the others find it current. A version newer than this code's is
refused. Every lock it waits for is bounded by ``lock_timeout`` and every statement but the
upgrade's DDL by the statement deadline besides, so a start never waits for ever on a stalled
connection or a table another session locked. :data:`~._log_postgres_ddl.MIGRATIONS` holds the steps, one tuple of statements per version; a later
layout adds a step (and never edits a released one).

Statements
----------
The texts are constants with the schema's name filled in once per store (:class:`Statements`),
so that asyncpg's per-connection cache keeps them prepared; the pool (:func:`open_pool`) sends
nothing between them. A write that touches several tables
is one statement of data-modifying ``WITH`` parts where it can be, to spare round trips.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from a2a_wire.server.store._log_postgres_conn import (
    MIGRATION_LOCK_TIMEOUT,
    STATEMENT_TIMEOUT,
    load_driver,
)
from a2a_wire.server.store._log_postgres_ddl import MIGRATIONS, SCHEMA_VERSION

if TYPE_CHECKING:
    import asyncpg

    from a2a_wire.server.store._log_postgres_conn import Conn

__all__ = [
    "DEFAULT_SCHEMA",
    "NOW",
    "Statements",
    "check_schema_name",
    "close_within",
    "lock_key",
    "load_driver",
    "migrate",
    "migrate_schema",
    "open_pool",
]

DEFAULT_SCHEMA = "a2a_wire"
"""The PostgreSQL schema the store's tables live in unless told otherwise."""

NOW = "COALESCE(${n}::float8, extract(epoch FROM clock_timestamp())::float8)"
"""The lease clock in SQL (:mod:`._log_postgres_lease`): ``$n``, or the server's clock if null."""

_SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,47}\Z")


async def open_pool(
    dsn: str,
    size: int,
    *,
    init: Callable[[asyncpg.Connection], Awaitable[None]] | None = None,
    options: Mapping[str, Any] | None = None,
) -> asyncpg.Pool:
    """A pool of at most ``size`` connections to ``dsn`` that skips asyncpg's reset on release.

    ``init`` runs once on each new connection (the text codec of :mod:`._log_postgres_text`);
    ``options`` are asyncpg's ``connect`` options for each (the deadlines of
    :mod:`._log_postgres_conn`). No connection is kept open for its own sake (``min_size=0``):
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


def check_schema_name(schema: str) -> str:
    """Return ``schema`` if it is a plain lower-case identifier of at most 48 characters.

    Raises:
        ValueError: it is not (names are put into SQL text, so they are checked, not quoted).
    """
    if not _SCHEMA_NAME.match(schema):
        raise ValueError(
            f"schema name {schema!r} must be lower-case letters, digits and '_', "
            "not starting with a digit, at most 48 characters"
        )
    return schema


def lock_key(schema: str, purpose: str) -> int:
    """A signed 64-bit advisory lock key for one purpose in one schema."""
    digest = hashlib.blake2b(f"a2a-wire:{schema}:{purpose}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


async def migrate_schema(
    conn: Conn,
    schema: str,
    *,
    lock_timeout: float = MIGRATION_LOCK_TIMEOUT,
    statement_timeout: float = STATEMENT_TIMEOUT,
) -> int:
    """Create or upgrade ``schema`` to :data:`~._log_postgres_ddl.SCHEMA_VERSION`, under the migration lock.

    A current schema is only read, so a role that may not create or change it can open it.
    Every wait for a lock (the migration lock another process holds while it migrates, a table
    another session locked) ends after ``lock_timeout`` seconds (PostgreSQL's ``lock_timeout``,
    for this transaction); every statement but the upgrade's own DDL ends after
    ``statement_timeout`` seconds more (a stalled connection); the DDL has no deadline: the
    data decides how long an upgrade takes.

    Returns:
        The version the schema had before (0: it was created).

    Raises:
        RuntimeError: the schema has a newer version than this code knows.
        asyncpg.LockNotAvailableError: a lock was not granted within ``lock_timeout``.
        TimeoutError: a statement did not answer in time; the transaction is left to the
            caller, who closes the connection.
    """
    bounded = lock_timeout + statement_timeout  # a lock wait, then the statement itself
    await conn.execute("BEGIN", timeout=statement_timeout)
    try:
        await conn.execute(
            f"SET LOCAL lock_timeout = {max(1, round(lock_timeout * 1000))}",
            timeout=statement_timeout,
        )
        await conn.execute(
            "SELECT pg_advisory_xact_lock($1)", lock_key(schema, "migrate"), timeout=bounded
        )
        version = await _version(conn, schema, bounded)
        if version < SCHEMA_VERSION:
            await _upgrade(conn, schema, version, bounded)
        await conn.execute("COMMIT", timeout=bounded)
    except BaseException:
        if not conn.is_closed() and conn.is_in_transaction():
            with contextlib.suppress(Exception):
                await conn.execute("ROLLBACK", timeout=statement_timeout)
        raise
    return version


async def _version(conn: Conn, schema: str, timeout: float) -> int:
    table = f"{schema}.schema_version"
    exists = await conn.fetchval("SELECT to_regclass($1) IS NOT NULL", table, timeout=timeout)
    if not exists:
        return 0
    version = int(await conn.fetchval(f"SELECT version FROM {table}", timeout=timeout))
    if version > SCHEMA_VERSION:
        raise RuntimeError(
            f"task schema {schema!r} has version {version}, newer than {SCHEMA_VERSION}; "
            "it was written by a later version of a2a-wire"
        )
    return version


async def _upgrade(conn: Conn, schema: str, version: int, timeout: float) -> None:
    """The steps from ``version`` on; ``timeout`` bounds all but the layout's DDL."""
    table = f"{schema}.schema_version"
    if version == 0:
        if not await conn.fetchval(
            "SELECT to_regnamespace($1) IS NOT NULL", schema, timeout=timeout
        ):
            await conn.execute(f"CREATE SCHEMA {schema}", timeout=timeout)
        await conn.execute(f"CREATE TABLE {table} (version integer NOT NULL)", timeout=timeout)
        await conn.execute(f"INSERT INTO {table} VALUES (0)", timeout=timeout)
    for step in range(version + 1, SCHEMA_VERSION + 1):
        for statement in MIGRATIONS[step]:
            await conn.execute(statement.format(s=schema))  # the data decides: no deadline
    await conn.execute(f"UPDATE {table} SET version = $1", SCHEMA_VERSION, timeout=timeout)


async def migrate(
    dsn: str,
    *,
    schema: str = DEFAULT_SCHEMA,
    connect_timeout: float = 60.0,
    lock_timeout: float = MIGRATION_LOCK_TIMEOUT,
    statement_timeout: float = STATEMENT_TIMEOUT,
) -> tuple[int, int]:
    """Create or upgrade the store's schema, as ``open`` does (``a2a-wire db migrate``).

    Bounded as :func:`migrate_schema` says; the connection is closed within
    ``statement_timeout`` (else dropped).

    Args:
        dsn: Where PostgreSQL is (a ``postgresql://`` URL or a libpq key/value string).
        schema: The PostgreSQL schema of the store's tables.
        connect_timeout: Seconds the connection may take.
        lock_timeout: Seconds the migration waits for each lock.
        statement_timeout: Seconds each statement but the upgrade's DDL may take besides.

    Returns:
        The schema's version before and after.

    Raises:
        RuntimeError: the schema has a newer version than this code, or asyncpg is missing.
        ValueError: ``schema`` is not a plain lower-case identifier.
        OSError, TimeoutError: no connection, or no answer in time.
        asyncpg.LockNotAvailableError: a lock was not granted within ``lock_timeout``.
    """
    check_schema_name(schema)
    conn = await load_driver().connect(dsn, timeout=connect_timeout)
    try:
        done = await migrate_schema(
            conn, schema, lock_timeout=lock_timeout, statement_timeout=statement_timeout
        )
    finally:
        await close_within(conn, statement_timeout)
    return done, SCHEMA_VERSION


async def close_within(conn: asyncpg.Connection, timeout: float) -> None:
    """Close ``conn`` gracefully within ``timeout`` seconds, else drop it."""
    try:
        await conn.close(timeout=timeout)
    except (OSError, TimeoutError, load_driver().InterfaceError):
        conn.terminate()


_APPEND = """
WITH head AS (
  UPDATE {s}.tasks SET last_seq = $2 + cardinality($3::int2[]), tail_bytes = tail_bytes + $9,
    state = COALESCE($5, state),
    status_s = CASE WHEN $5 IS NULL THEN status_s ELSE $6 END,
    status_ns = CASE WHEN $5 IS NULL THEN status_ns ELSE $7 END,
    changed_at = CASE WHEN $5 IS NULL THEN changed_at ELSE $8 END
  WHERE id = $1 AND last_seq = $2 AND NOT deleted
  RETURNING tail_bytes, snap_bytes
), logged AS (
  INSERT INTO {s}.task_events (task_id, seq, kind, body)
  SELECT $1, $2 + e.n, e.kind, e.body
  FROM head, unnest($3::int2[], $4::bytea[]) WITH ORDINALITY AS e(kind, body, n)
), box AS (
  INSERT INTO {s}.push_outbox (delivery_id, task_id, config_id, body, created_at)
  SELECT replace(gen_random_uuid()::text, '-', ''), c.task_id, c.id, p.body, $11
  FROM head, unnest($10::bytea[]) WITH ORDINALITY AS p(body, n)
  JOIN {s}.push_configs c ON c.task_id = $1
  ORDER BY p.n, c.position FOR SHARE OF c
  RETURNING 1
), dropped AS (
  DELETE FROM {s}.task_leases WHERE task_id = $1 AND $14::int2 = 2 AND EXISTS (SELECT 1 FROM head)
), taken AS (
  INSERT INTO {s}.task_leases (task_id, process_id, expires_at)
  SELECT $1, $15::text, COALESCE($16::float8, extract(epoch FROM clock_timestamp())::float8) + $17
  FROM head WHERE $14::int2 = 1
  ON CONFLICT (task_id) DO NOTHING
), woken AS (
  SELECT pg_notify($12, $13) FROM head WHERE $13 IS NOT NULL
)
SELECT tail_bytes, snap_bytes, (SELECT count(*) FROM box), (SELECT count(*) FROM woken) FROM head
"""

_CREATE = """
WITH t AS (
  INSERT INTO {s}.tasks (id, owner, context_id, state, status_s, status_ns, changed_at,
    first_seq, last_seq, snap_bytes, tail_bytes)
  VALUES ($1, $2, $3, $4, $5, $6, $7, 1, 1, octet_length($8::bytea), 0) RETURNING id
), snap AS (
  INSERT INTO {s}.task_snapshots (task_id, seq, body) SELECT id, 1, $8 FROM t
), first AS (
  INSERT INTO {s}.task_events (task_id, seq, kind, body) SELECT id, 1, 1, $9 FROM t
), box AS (
  INSERT INTO {s}.push_outbox (delivery_id, task_id, config_id, body, created_at)
  SELECT replace(gen_random_uuid()::text, '-', ''), c.task_id, c.id, $9::bytea, $13
  FROM t, {s}.push_configs c WHERE $12 AND c.task_id = $1 ORDER BY c.position FOR SHARE OF c
  RETURNING 1
), leased AS (
  INSERT INTO {s}.task_leases (task_id, process_id, expires_at)
  SELECT id, $14::text, COALESCE($15::float8, extract(epoch FROM clock_timestamp())::float8) + $16
  FROM t WHERE $14::text IS NOT NULL
  ON CONFLICT (task_id) DO UPDATE SET process_id = excluded.process_id,
    expires_at = excluded.expires_at
), woken AS (
  SELECT pg_notify($10, $11) FROM t WHERE $11 IS NOT NULL
)
SELECT (SELECT count(*) FROM box), (SELECT count(*) FROM woken)
"""

_ENQUEUE = """
INSERT INTO {s}.push_outbox (delivery_id, task_id, config_id, body, created_at)
SELECT replace(gen_random_uuid()::text, '-', ''), c.task_id, c.id, $2::bytea, $3
FROM {s}.push_configs c WHERE c.task_id = $1 ORDER BY c.position FOR SHARE OF c
RETURNING seq
"""

_READ = """
SELECT s.seq, 0::int2, s.body FROM {s}.tasks t JOIN {s}.task_snapshots s ON s.task_id = t.id
WHERE t.id = $1 AND t.owner = $2 AND NOT t.deleted
UNION ALL SELECT seq, kind, body FROM {s}.task_events WHERE task_id = $1
AND seq > (SELECT seq FROM {s}.task_snapshots WHERE task_id = $1) ORDER BY 1
"""

_FOLD = """
WITH snap AS (
  UPDATE {s}.task_snapshots SET seq = $2, body = $3::bytea WHERE task_id = $1 AND seq = $4
  RETURNING task_id
)
UPDATE {s}.tasks t SET snap_bytes = octet_length($3), tail_bytes = greatest(0, tail_bytes - $5)
FROM snap WHERE t.id = snap.task_id RETURNING t.tail_bytes
"""

_EVENTS = """
SELECT t.first_seq, t.last_seq, e.seq, e.kind, e.body FROM {s}.tasks t
LEFT JOIN LATERAL (SELECT seq, kind, body FROM {s}.task_events
  WHERE task_id = t.id AND seq > $3 ORDER BY seq LIMIT $4) e ON true
WHERE t.id = $1 AND t.owner = $2 AND NOT t.deleted ORDER BY e.seq
"""

_COMPACT = """
WITH t AS (
  SELECT id, least($2, first_seq + $3 - 1) AS upto FROM {s}.tasks
  WHERE id = $1 AND NOT deleted FOR UPDATE
), dropped AS (
  DELETE FROM {s}.task_events e USING t WHERE e.task_id = t.id AND e.seq <= t.upto RETURNING 1
), moved AS (
  UPDATE {s}.tasks SET first_seq = t.upto + 1 FROM t
  WHERE tasks.id = t.id AND EXISTS (SELECT 1 FROM dropped)
), woken AS (
  SELECT pg_notify($4, $5) WHERE EXISTS (SELECT 1 FROM dropped)
)
SELECT (SELECT count(*) FROM dropped), (SELECT count(*) FROM woken)
"""

_DELETE = """
WITH t AS (
  UPDATE {s}.tasks SET deleted = true WHERE id = $1 AND NOT deleted RETURNING id
), snap AS (
  DELETE FROM {s}.task_snapshots WHERE task_id IN (SELECT id FROM t)
), configs AS (
  DELETE FROM {s}.push_configs WHERE task_id IN (SELECT id FROM t)
), leases AS (
  DELETE FROM {s}.task_leases WHERE task_id IN (SELECT id FROM t)
), cancels AS (
  DELETE FROM {s}.cancel_requests WHERE task_id IN (SELECT id FROM t)
), replies AS (
  DELETE FROM {s}.cancel_replies WHERE task_id IN (SELECT id FROM t)
)
SELECT count(pg_notify($2, $3)) FROM t
"""

_LIST = (
    "SELECT t.status_s, t.status_ns, t.id, s.seq, s.body, t.last_seq"
    " FROM {s}.tasks t JOIN {s}.task_snapshots s ON s.task_id = t.id"
)


@dataclass(frozen=True, slots=True)
class Statements:
    """The store's statements with its schema's name filled in (see "Statements")."""

    append: str
    create: str
    enqueue: str
    read: str
    fold: str
    events: str
    compact: str
    delete: str
    list: str
    lock_head: str
    bounds: str
    bounds_seq: str
    last_seq: str
    count: str
    expired: str
    ping: str

    @classmethod
    def for_schema(cls, schema: str) -> Statements:
        """The statements on the tables of ``schema`` (a name :func:`check_schema_name` passed)."""
        texts = {
            "append": _APPEND,
            "create": _CREATE,
            "enqueue": _ENQUEUE,
            "read": _READ,
            "fold": _FOLD,
            "events": _EVENTS,
            "compact": _COMPACT,
            "delete": _DELETE,
            "list": _LIST,
            "lock_head": "SELECT owner, context_id, state, last_seq FROM {s}.tasks"
            " WHERE id = $1 AND NOT deleted FOR UPDATE",
            "bounds": "SELECT t.owner, s.seq, t.last_seq FROM {s}.tasks t"
            " JOIN {s}.task_snapshots s ON s.task_id = t.id WHERE t.id = $1 AND NOT t.deleted",
            "bounds_seq": "SELECT seq FROM {s}.task_snapshots WHERE task_id = $1",
            "last_seq": "SELECT last_seq FROM {s}.tasks WHERE id = $1 AND NOT deleted",
            "count": "SELECT count(*) FROM {s}.tasks t",
            # A lease on a task that is not running (a follow-up resuming an interrupted
            # task, on any process) makes it busy for every process's sweeper.
            "expired": "SELECT id FROM {s}.tasks t WHERE state = ANY($1::text[])"
            " AND changed_at < $2 AND NOT deleted AND (NOT $4 OR first_seq <= last_seq)"
            " AND (state IN ('TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING') OR NOT EXISTS"
            " (SELECT 1 FROM {s}.task_leases l"
            " WHERE l.task_id = t.id AND l.expires_at > '-infinity'))"
            " ORDER BY changed_at, id LIMIT $3",
            # Readiness: one primary-key read of each table a request needs, for a key no
            # row has, so a table another session locked makes the ping wait (and fail).
            "ping": "SELECT (SELECT 1 FROM {s}.tasks WHERE id = '')"
            " , (SELECT 1 FROM {s}.task_snapshots WHERE task_id = '')"
            " , (SELECT 1 FROM {s}.task_events WHERE task_id = '' AND seq = 0)"
            " , (SELECT 1 FROM {s}.task_leases WHERE task_id = '')",
        }
        assert set(texts) == {f.name for f in fields(cls)}
        return cls(**{name: text.strip().format(s=schema) for name, text in texts.items()})
