"""The task store backends every store suite runs on (tests/server/store/).

A new backend is done when the suites pass on it: add it to ``BACKENDS`` and to
:meth:`Backend.new` (the fixtures of ``tests/server/store/conftest.py`` pick it up).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pg_support

from a2a_wire.server.store import EventLogStore, InMemoryTaskStore, SQLiteTaskStore
from a2a_wire.server.store._base import RESTART_MESSAGE
from a2a_wire.server.store._log_postgres import PostgresEventLog
from a2a_wire.server.store._log_postgres_lease import PROCESS_LOST_MESSAGE

BACKENDS = ["memory", "sqlite", "postgresql"]
"""Every task store the store suites run on; the one place a new backend is added."""

LOG_BACKENDS = BACKENDS
"""The backends of the event-log contract (tests/server/store/test_event_log.py)."""

_POSTGRES = {"dsn": ""}


def use_postgres(dsn: str) -> None:
    """The server a ``postgresql`` backend opens its stores on (from the ``postgres_dsn`` fixture)."""
    _POSTGRES["dsn"] = dsn


class Backend:
    """Opens stores of one kind; a reopened SQLite store reads the same file.

    Args:
        kind: One of :data:`BACKENDS`.
        directory: Where files go.
        options: Constructor options of every store it opens (``history_limit``, ``clock``,
            ``page_token_key``...).
    """

    def __init__(self, kind: str, directory: Path, **options: Any) -> None:
        self.kind = kind
        self.directory = directory
        self.path = directory / "log.sqlite3"
        self.options = options
        self.opened: list[EventLogStore] = []
        self.schema = pg_support.new_schema() if kind == "postgresql" else ""
        self._prepared = False
        self._files: set[str] = set()  # schemas of ``file=`` stores

    @property
    def restart_message(self) -> str:
        """The message recovery puts on a running task: PostgreSQL's is a takeover's."""
        return PROCESS_LOST_MESSAGE if self.kind == "postgresql" else RESTART_MESSAGE

    def new(self, *, file: str = "log.sqlite3", **options: Any) -> EventLogStore:
        """A store, not opened; ``file`` names another database (another store's data)."""
        chosen = {**self.options, **options}
        if self.kind == "sqlite":
            return SQLiteTaskStore(self.directory / file, **chosen)
        if self.kind == "postgresql":
            schema = self.schema if file == "log.sqlite3" else f"{self.schema}_{file.split('.')[0]}"
            if schema != self.schema:
                self._files.add(schema)
            return PostgresEventLog(_POSTGRES["dsn"], schema=schema, **chosen)
        return InMemoryTaskStore(**chosen)

    async def open(self, *, file: str = "log.sqlite3", **options: Any) -> EventLogStore:
        """A new store, opened; it must have recovered nothing."""
        await self._prepare()
        store = self.new(file=file, **options)
        failed = await store.open()
        self.opened.append(store)  # closed by the fixture even if a check below fails
        assert failed == []
        return store

    async def reopen(self, store: EventLogStore) -> tuple[EventLogStore, list[str]]:
        """Close ``store`` and open it again (the same instance for memory), with recovery."""
        await store.close()
        await self._prepare()
        again = store if self.kind == "memory" else self.new()
        failed = await again.open()
        self.opened.append(again)
        return again, failed

    async def _prepare(self) -> None:
        """Before the first store on the schema: a spare emptied schema takes its name."""
        if self.kind == "postgresql" and not self._prepared:
            self._prepared = True
            await pg_support.take_spare_schema(_POSTGRES["dsn"], self.schema)

    async def close_all(self) -> None:
        for store in self.opened:
            await store.close()
        if self.kind == "postgresql":
            for extra in sorted(self._files):  # other files' (``file=``) are not recycled
                await pg_support.drop_schema(_POSTGRES["dsn"], extra)
            await pg_support.recycle_schema(_POSTGRES["dsn"], self.schema)
