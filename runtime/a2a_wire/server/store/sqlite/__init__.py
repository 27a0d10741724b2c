"""The SQLite task store: the durable embedded default, one file owned by one process."""

from a2a_wire.server.store.sqlite._schema import BUSY_TIMEOUT_SECONDS
from a2a_wire.server.store.sqlite._store import SQLiteTaskStore

__all__ = ["BUSY_TIMEOUT_SECONDS", "SQLiteTaskStore"]
