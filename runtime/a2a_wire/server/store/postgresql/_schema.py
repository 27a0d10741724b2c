"""The PostgreSQL store's schema: its layout, the steps that migrate it, and :func:`migrate`.

A migration runs in one transaction under an advisory lock derived from the schema's name, so
processes starting together take turns; a released step is never edited, a later layout adds
one. Upgrade every process of a schema together. See docs/internals/store.md,
"PostgreSQL: layout and migration".
"""

from __future__ import annotations

import contextlib
import hashlib
import re
from typing import TYPE_CHECKING

from a2a_wire.server.store.postgresql._connection import (
    MIGRATION_LOCK_TIMEOUT,
    STATEMENT_TIMEOUT,
    close_within,
    load_driver,
)

if TYPE_CHECKING:
    from a2a_wire.server.store.postgresql._connection import Conn

__all__ = [
    "DEFAULT_SCHEMA",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "check_schema_name",
    "lock_key",
    "migrate",
    "migrate_schema",
]

DEFAULT_SCHEMA = "a2a_wire"
"""The PostgreSQL schema the store's tables live in unless told otherwise."""

_SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,47}\Z")


_RUNNING = "('TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING')"

MIGRATIONS: dict[int, tuple[str, ...]] = {
    1: (
        "CREATE TABLE {s}.tasks ("
        " id text PRIMARY KEY,"
        " owner text NOT NULL,"
        " context_id text NOT NULL,"
        " state text NOT NULL,"
        " status_s bigint NOT NULL,"
        " status_ns integer NOT NULL,"
        " changed_at double precision NOT NULL,"
        " first_seq bigint NOT NULL,"
        " last_seq bigint NOT NULL,"
        " snap_bytes bigint NOT NULL,"
        " tail_bytes bigint NOT NULL,"
        " deleted boolean NOT NULL DEFAULT false"
        ") WITH (fillfactor = 80)",
        "CREATE INDEX tasks_by_owner ON {s}.tasks"
        " (owner, status_s DESC, status_ns DESC, id) WHERE NOT deleted",
        "CREATE INDEX tasks_by_context ON {s}.tasks"
        " (owner, context_id, status_s DESC, status_ns DESC, id) WHERE NOT deleted",
        "CREATE INDEX tasks_by_change ON {s}.tasks (state, changed_at) WHERE NOT deleted",
        "CREATE INDEX tasks_deleted ON {s}.tasks (id) WHERE deleted",
        "CREATE TABLE {s}.task_snapshots ("
        " task_id text PRIMARY KEY, seq bigint NOT NULL, body bytea NOT NULL)",
        "CREATE TABLE {s}.task_events ("
        " task_id text NOT NULL, seq bigint NOT NULL, kind smallint NOT NULL,"
        " body bytea NOT NULL, PRIMARY KEY (task_id, seq))",
        "CREATE TABLE {s}.push_configs ("
        " task_id text NOT NULL, id text NOT NULL,"
        " position bigint GENERATED ALWAYS AS IDENTITY, body bytea NOT NULL,"
        " PRIMARY KEY (task_id, id))",
        "CREATE TABLE {s}.push_outbox ("
        " seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
        " delivery_id text NOT NULL,"
        " task_id text NOT NULL,"
        " config_id text NOT NULL,"
        " body bytea NOT NULL,"
        " created_at double precision NOT NULL,"
        " attempts integer NOT NULL DEFAULT 0,"
        " next_attempt_at double precision NOT NULL DEFAULT 0,"
        " last_error text NOT NULL DEFAULT '',"
        " failed boolean NOT NULL DEFAULT false)",
        "CREATE INDEX push_outbox_by_lane ON {s}.push_outbox (task_id, config_id, failed, seq)",
    ),
    2: (
        "CREATE TABLE {s}.processes (id text PRIMARY KEY, started_at double precision NOT NULL,"
        " beat_at double precision NOT NULL, expires_at double precision NOT NULL)",
        "CREATE TABLE {s}.task_leases (task_id text PRIMARY KEY, process_id text NOT NULL,"
        " expires_at double precision NOT NULL)",
        "CREATE INDEX task_leases_by_process ON {s}.task_leases (process_id)",
        "CREATE INDEX task_leases_by_expiry ON {s}.task_leases (expires_at)",
        "CREATE TABLE {s}.cancel_requests (task_id text PRIMARY KEY, process_id text NOT NULL,"
        " requested_at double precision NOT NULL)",
        "CREATE INDEX cancel_requests_by_process ON {s}.cancel_requests (process_id)",
        "ALTER TABLE {s}.push_outbox ADD COLUMN claimed_by text,"
        " ADD COLUMN claim_until double precision NOT NULL DEFAULT 0",
        "CREATE INDEX push_outbox_pending ON {s}.push_outbox (task_id, config_id, seq)"
        " WHERE NOT failed",
        "CREATE INDEX push_outbox_claims ON {s}.push_outbox (claimed_by)"
        " WHERE claimed_by IS NOT NULL",
        "INSERT INTO {s}.task_leases (task_id, process_id, expires_at)"
        f" SELECT id, '', '-infinity' FROM {{s}}.tasks WHERE state IN {_RUNNING} AND NOT deleted",
    ),
    3: (
        "ALTER TABLE {s}.cancel_requests ADD COLUMN id text, ADD COLUMN asker text NOT NULL"
        " DEFAULT '', ADD COLUMN metadata jsonb",
        "UPDATE {s}.cancel_requests SET id = task_id",
        "ALTER TABLE {s}.cancel_requests DROP CONSTRAINT cancel_requests_pkey,"
        " ALTER COLUMN id SET NOT NULL, ADD PRIMARY KEY (id)",
        "CREATE INDEX cancel_requests_by_task ON {s}.cancel_requests (task_id)",
        "CREATE TABLE {s}.cancel_replies (request_id text PRIMARY KEY, task_id text NOT NULL,"
        " asker text NOT NULL, outcome text NOT NULL, error jsonb,"
        " replied_at double precision NOT NULL)",
        "CREATE INDEX cancel_replies_by_asker ON {s}.cancel_replies (asker)",
    ),
    4: (
        # The claim's two ways to the due lane heads (store.postgresql._push): a row never
        # attempted is its lane's head only if it is the lane's first such row; a row attempted
        # and not given up is a head, due at next_attempt_at.
        "CREATE INDEX push_outbox_fresh ON {s}.push_outbox (task_id, config_id, seq)"
        " WHERE attempts = 0 AND NOT failed",
        "CREATE INDEX push_outbox_retried ON {s}.push_outbox (next_attempt_at)"
        " WHERE attempts > 0 AND NOT failed",
    ),
}
"""Statements that bring the layout from the version before each key to that version."""

SCHEMA_VERSION = max(MIGRATIONS)
"""The layout this code reads and writes."""


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
    """Create or upgrade ``schema`` to :data:`~._schema.SCHEMA_VERSION`, under the migration lock.

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
