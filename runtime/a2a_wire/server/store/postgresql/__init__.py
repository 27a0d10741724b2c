"""The PostgreSQL task store, shared by any number of server processes.

The driver (asyncpg, the ``postgresql`` extra) is imported when a store opens, never by
importing this package.
"""

from a2a_wire.server.store.postgresql._connection import (
    ACQUIRE_TIMEOUT,
    CONNECT_TIMEOUT,
    MIGRATION_LOCK_TIMEOUT,
    STATEMENT_TIMEOUT,
)
from a2a_wire.server.store.postgresql._leases import (
    HEARTBEAT_SECONDS,
    LEASE_SECONDS,
    PROCESS_LOST_MESSAGE,
)
from a2a_wire.server.store.postgresql._schema import DEFAULT_SCHEMA, check_schema_name, migrate
from a2a_wire.server.store.postgresql._store import POLL_INTERVAL, POOL_SIZE, PostgresTaskStore

__all__ = [
    "ACQUIRE_TIMEOUT",
    "CONNECT_TIMEOUT",
    "DEFAULT_SCHEMA",
    "HEARTBEAT_SECONDS",
    "LEASE_SECONDS",
    "MIGRATION_LOCK_TIMEOUT",
    "POLL_INTERVAL",
    "POOL_SIZE",
    "PROCESS_LOST_MESSAGE",
    "STATEMENT_TIMEOUT",
    "PostgresTaskStore",
    "check_schema_name",
    "migrate",
]
