"""``[postgresql]``: where the PostgreSQL task store of ``storage = "postgresql"`` is.

The table is its own section, as ``[push]`` is, because its keys describe the store and not the
listening server. Its values are checked whatever ``[server] storage`` says; the address is
required only when the storage is PostgreSQL.

The address (DSN) may carry a password, so the file need not hold it: ``dsn_env`` names the
environment variable it is read from (``A2A_WIRE_DSN`` by default, the variable
``a2a-wire db migrate`` reads too), at start, and ``dsn`` in the file is the alternative for
addresses without a secret (libpq's ``PGPASSWORD`` and ``~/.pgpass`` still apply, as asyncpg
reads them). No problem message repeats the address.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from a2a_wire.cli._install import missing_extra
from a2a_wire.cli.config._schema import Table
from a2a_wire.server.store import (
    ACQUIRE_TIMEOUT,
    CONNECT_TIMEOUT,
    DEFAULT_SCHEMA,
    HEARTBEAT_SECONDS,
    LEASE_SECONDS,
    MIGRATION_LOCK_TIMEOUT,
    POLL_INTERVAL,
    POOL_SIZE,
    STATEMENT_TIMEOUT,
    check_schema_name,
)

__all__ = ["DEFAULT_DSN_VARIABLE", "PostgresSection", "read_postgresql"]

DEFAULT_DSN_VARIABLE = "A2A_WIRE_DSN"
"""The environment variable the address is read from unless ``dsn`` or ``dsn_env`` says."""

_DSN_PREFIXES = ("postgresql://", "postgres://")


@dataclass(frozen=True)
class PostgresSection:
    """``[postgresql]`` (docs/server.md, "Configuration reference").

    Attributes:
        dsn: The address written in the file (left out of ``repr``: it may hold a password).
        dsn_env: The environment variable holding the address when ``dsn`` is empty.
        schema: The PostgreSQL schema of the task tables (created or migrated on start).
        pool_size: Most connections of each process's pool (its listening connection on top).
        poll_interval_seconds: How often a waiting stream reads the events table when no
            notification came (the fallback for a lost ``NOTIFY``).
        lease_seconds: How long a process's lease on a task it runs lasts after the heartbeat
            that renewed it; a dead process's running tasks fail within about this plus one
            heartbeat (docs/scale-out.md, "Sizing the lease").
        heartbeat_seconds: Seconds between a process's heartbeats (each also looks for expired
            leases to take over); below ``lease_seconds``.
        connect_timeout_seconds: Longest time a new connection to PostgreSQL may take.
        statement_timeout_seconds: Longest time one store call may take, the wait for a
            connection included (PostgreSQL's ``statement_timeout`` too); past it, 503.
        acquire_timeout_seconds: Longest time a call waits for a connection of the pool.
        migration_lock_timeout_seconds: Longest time the schema check at start (and
            ``db migrate``) waits for each lock another session holds (another process's
            migration, a locked table); past it the start fails.
    """

    dsn: str = field(default="", repr=False)
    dsn_env: str = DEFAULT_DSN_VARIABLE
    schema: str = DEFAULT_SCHEMA
    pool_size: int = POOL_SIZE
    poll_interval_seconds: float = POLL_INTERVAL
    lease_seconds: float = LEASE_SECONDS
    heartbeat_seconds: float = HEARTBEAT_SECONDS
    connect_timeout_seconds: float = CONNECT_TIMEOUT
    statement_timeout_seconds: float = STATEMENT_TIMEOUT
    acquire_timeout_seconds: float = ACQUIRE_TIMEOUT
    migration_lock_timeout_seconds: float = MIGRATION_LOCK_TIMEOUT

    def address(self) -> str:
        """The DSN: ``dsn``, else the value of ``dsn_env`` now (``""`` when it is unset)."""
        return self.dsn or os.environ.get(self.dsn_env, "")


def _looks_like_a_dsn(value: str) -> bool:
    """A ``postgresql://`` URL or a libpq ``key=value`` string (asyncpg parses the rest)."""
    return value.startswith(_DSN_PREFIXES) or "=" in value


def read_postgresql(table: Table, server: Table, storage: str) -> PostgresSection:
    """Read ``[postgresql]``; with ``storage == "postgresql"`` an address and asyncpg are required.

    Args:
        table: The ``[postgresql]`` table (empty when absent).
        server: The ``[server]`` table, where a missing address is reported when the file has
            no ``[postgresql]`` table.
        storage: ``[server] storage`` as read.

    Returns:
        The section (defaults in place of refused values).
    """
    section = PostgresSection(
        dsn=table.text("dsn"),
        dsn_env=table.text("dsn_env", DEFAULT_DSN_VARIABLE),
        schema=table.text("schema", DEFAULT_SCHEMA),
        pool_size=table.integer("pool_size", POOL_SIZE, 1),
        poll_interval_seconds=table.number("poll_interval_seconds", POLL_INTERVAL),
        lease_seconds=table.number("lease_seconds", LEASE_SECONDS),
        heartbeat_seconds=table.number("heartbeat_seconds", HEARTBEAT_SECONDS),
        connect_timeout_seconds=table.number("connect_timeout_seconds", CONNECT_TIMEOUT),
        statement_timeout_seconds=table.number("statement_timeout_seconds", STATEMENT_TIMEOUT),
        acquire_timeout_seconds=table.number("acquire_timeout_seconds", ACQUIRE_TIMEOUT),
        migration_lock_timeout_seconds=table.number(
            "migration_lock_timeout_seconds", MIGRATION_LOCK_TIMEOUT
        ),
    )
    table.done()
    if section.heartbeat_seconds >= section.lease_seconds:
        key = "heartbeat_seconds" if "heartbeat_seconds" in table.data else "lease_seconds"
        table.problem((key,), "heartbeat_seconds must be below lease_seconds")
    try:
        check_schema_name(section.schema)
    except ValueError as exc:
        table.problem(("schema",), str(exc).replace("schema name ", "", 1))
    if section.dsn and "dsn_env" in table.data and section.dsn_env:
        table.problem(("dsn_env",), "set dsn or dsn_env, not both")
    if section.dsn and not _looks_like_a_dsn(section.dsn):
        table.problem(("dsn",), "must be a postgresql:// URL or a libpq key=value string")
    if storage == "postgresql":
        missing = missing_extra("asyncpg", "postgresql", '"postgresql"')
        if missing is not None:
            server.problem(("storage",), missing)
        if not section.dsn:
            _check_variable(table, server, section.dsn_env)
    return section


def _check_variable(table: Table, server: Table, name: str) -> None:
    """The variable ``dsn_env`` names must hold an address (its value is never shown)."""
    where, key = (table, ("dsn_env",)) if table.data else (server, ("storage",))
    if not name:
        where.problem(key, 'storage "postgresql" needs [postgresql] dsn or dsn_env')
        return
    value = os.environ.get(name, "")
    if not value:
        message = f"environment variable {name} ([postgresql] dsn_env) is not set; it must hold"
        where.problem(key, f"{message} the DSN (or set [postgresql] dsn)")
    elif not _looks_like_a_dsn(value):
        message = f"environment variable {name} ([postgresql] dsn_env) must hold a DSN:"
        message += " a postgresql:// URL or a libpq key=value string"
        where.problem(key, message)
