"""The task store backends every store suite runs on (tests/server/store/).

A new backend is done when the suites pass on it: add it to ``BACKENDS`` and to
:meth:`Backend.new` (the fixtures of ``tests/server/store/conftest.py`` pick it up), and to
``SERVER_BACKENDS`` and :class:`ServerStores` for the server's method tests (the ``store_for``
fixture of ``tests/conftest.py``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pg_support
import pytest

from a2a_wire.server import ServerSettings
from a2a_wire.server.store import (
    PROCESS_LOST_MESSAGE,
    RESTART_MESSAGE,
    EventLogStore,
    InMemoryTaskStore,
    PostgresTaskStore,
    SQLiteTaskStore,
)

BACKENDS = ["memory", "sqlite", "postgresql"]
MACHINE_BACKENDS = ["memory", "sqlite", pytest.param("postgresql", marks=pytest.mark.slow)]
"""The backends of the state machine tests: the PostgreSQL run takes minutes, so CI runs it."""
"""Every task store the store suites run on; the one place a new backend is added."""


_POSTGRES = {"dsn": ""}


def use_postgres(dsn: str) -> None:
    """The server a ``postgresql`` backend opens its stores on (set by the ``postgres_dsn``
    fixture, which a fixture making a ``postgresql`` backend must request first)."""
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
        if kind == "postgresql" and not _POSTGRES["dsn"]:
            raise RuntimeError("request the postgres_dsn fixture before a postgresql backend")
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
            return PostgresTaskStore(_POSTGRES["dsn"], schema=schema, **chosen)
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


SERVER_BACKENDS = ["memory", "postgresql"]
"""The stores the server's method tests run on (the ``store_kind`` fixture of tests/server and
tests/functional): ``create_app``'s in-memory default and PostgreSQL. SQLite's server tests are
the ones that name it (restart, resume after restart)."""


class _AppStore(PostgresTaskStore):
    """A store of :class:`ServerStores`: once its app has closed it, its schema goes back."""

    def __init__(
        self, dsn: str, schema: str, done: Callable[[str], Awaitable[None]], **options: Any
    ) -> None:
        super().__init__(dsn, schema=schema, **options)
        self.schema_name = schema
        self.opened = False
        self._done: Callable[[str], Awaitable[None]] | None = done

    async def open(self) -> list[str]:
        self.opened = True
        return await super().open()

    async def close(self) -> None:
        await super().close()
        await self.give_back()

    async def give_back(self) -> None:
        """Recycle or drop the schema, once."""
        done, self._done = self._done, None
        if done is not None:
            await done(self.schema_name)


class ServerStores:
    """The task stores of one test's apps: ``stores(settings)`` gives the next one.

    For memory it gives ``None`` (``create_app`` makes its in-memory store from the settings);
    for PostgreSQL, a store (not opened: the app opens and closes it) on a schema of its own,
    the first one a spare emptied schema. A schema goes back (the first recycled, the others
    dropped) when its app closes the store, which may be after this helper's fixture ends (the
    app's test client can be torn down after it), or at :meth:`close_all` if it was never opened.

    Args:
        kind: ``"memory"`` or ``"postgresql"``.
        dsn: The PostgreSQL server (for ``"postgresql"``).
    """

    def __init__(self, kind: str, dsn: str = "") -> None:
        self.kind = kind
        self.dsn = dsn
        self.made: list[_AppStore] = []
        self._first = pg_support.new_schema()

    async def prepare(self) -> None:
        """Give the first store's schema a spare emptied one (before the test runs)."""
        if self.kind == "postgresql":
            await pg_support.take_spare_schema(self.dsn, self._first)

    def __call__(self, settings: ServerSettings | None = None) -> EventLogStore | None:
        """The store of the next app, with the limits of ``settings`` (defaults if ``None``)."""
        if self.kind == "memory":
            return None
        settings = settings or ServerSettings()
        schema = pg_support.new_schema() if self.made else self._first
        limit = settings.max_history_per_task
        store = _AppStore(self.dsn, schema, self._give_back, history_limit=limit)
        self.made.append(store)
        return store

    async def _give_back(self, schema: str) -> None:
        if schema == self._first:
            await pg_support.recycle_schema(self.dsn, schema)
        else:
            await pg_support.drop_schema(self.dsn, schema)

    async def close_all(self) -> None:
        """Give back the schemas of the stores no app opened (the others go when closed)."""
        if self.kind == "postgresql" and not self.made:
            await self._give_back(self._first)  # it may hold a spare schema
        for store in self.made:
            if not store.opened:
                await store.give_back()


@pytest.fixture(params=SERVER_BACKENDS)
def store_kind(request: pytest.FixtureRequest) -> str:
    """Runs every test whose ``app`` takes a store from ``store_for`` on each server backend
    (imported by the conftest.py of tests/server and tests/functional)."""
    return str(request.param)


_SERVE_POSTGRES = """
[postgresql]
dsn = "{dsn}"
schema = "{schema}"
lease_seconds = 5.0
heartbeat_seconds = 0.5
"""


@dataclass
class ServeStorage:
    """The storage of an ``a2a-wire serve`` configuration in an end-to-end test.

    On SQLite a restarted server fails the tasks that were running on open, with
    :data:`RESTART_MESSAGE`. On PostgreSQL ``serve`` opens its store without recovery (other
    processes may share the schema), so the restarted process fails them only once the dead
    one's leases have expired (5 s here: 2 s proved too short on a busy machine, where a live
    but starved process lost its leases) and its keeper takes them over, with
    :data:`PROCESS_LOST_MESSAGE` (docs/scale-out.md, "Failover"): a test waits for that.
    """

    kind: str
    dsn: str = ""
    schema: str = ""

    @property
    def lost_message(self) -> str:
        """The status message of a task that was running when its server was killed."""
        return PROCESS_LOST_MESSAGE if self.kind == "postgresql" else RESTART_MESSAGE

    def config(self, text: str) -> str:
        """``text`` (a configuration template with a ``[server]`` table) on this storage."""
        if self.kind == "sqlite":
            return text
        server = text.replace("[server]\n", '[server]\nstorage = "postgresql"\n', 1)
        return server + _SERVE_POSTGRES.format(dsn=self.dsn, schema=self.schema)
