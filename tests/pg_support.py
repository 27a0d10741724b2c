"""Where the tests find PostgreSQL (STYLE.md section 9), and a schema of its own for each test.

1. ``A2A_WIRE_TEST_POSTGRES_DSN`` names a server (``.ci/run`` sets it; this project's machines run
   PostgreSQL 15 on 127.0.0.1:5432: ``postgresql://postgres@127.0.0.1:5432/test``).
2. Else, where ``initdb`` and ``pg_ctl`` are on the PATH, a throwaway cluster is made in a
   temporary folder for the session (fsync off, trust authentication, loopback only) and stopped
   by ``pg_ctl stop`` on that folder at the end; as root, it runs as the ``postgres`` user,
   since PostgreSQL refuses to run as root. ``pytest-postgresql``'s ``postgresql_proc`` fixture
   follows the same pattern.
3. Else the tests that need it are skipped, with one summary line saying what to set; with
   ``A2A_WIRE_REQUIRE_POSTGRES=1`` (set by ``.ci/run``) they fail instead.

The fault tests restart and stop a server, so they always use a throwaway :class:`Cluster` of
their own (never the server of ``A2A_WIRE_TEST_POSTGRES_DSN``): its binaries come from the
folder ``A2A_WIRE_TEST_POSTGRES_BIN`` names (``.ci/run`` sets it, e.g.
``/usr/lib/postgresql/15/bin``), else from the PATH; without them those tests skip with one
summary line, and fail instead with ``A2A_WIRE_REQUIRE_POSTGRES_CLUSTER=1`` (set by
``.ci/run``). pytest-postgresql's ``postgresql_proc`` would do the same, but runs ``pg_ctl`` as
the current user, and PostgreSQL refuses to run as root, which CI is.

Each test works in a schema of its own (:func:`new_schema`) and drops it (:func:`drop_schema`).
A test that only needs an empty schema of the store's current layout takes a spare one under
its new name (:func:`take_spare_schema`) and hands it back to :func:`recycle_schema`, which
empties it for the next test (every table emptied, every identity restarted) rather than
dropping it: renaming and emptying a schema takes a few milliseconds where creating the layout
again takes 40 ms or more, and the server's method tests run on hundreds of them. The name is new for every test, so a stale
``LISTEN`` of an earlier test hears nothing of the next one. :func:`drop_spare_schemas` drops
the ones left at the end of the session.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

import asyncpg
from ports import free_port

from a2a_wire.server.store import PostgresTaskStore
from a2a_wire.server.store.postgresql._listen import Listener
from a2a_wire.server.store.postgresql._schema import SCHEMA_VERSION

DSN_VARIABLE = "A2A_WIRE_TEST_POSTGRES_DSN"
REQUIRE_VARIABLE = "A2A_WIRE_REQUIRE_POSTGRES"
BIN_VARIABLE = "A2A_WIRE_TEST_POSTGRES_BIN"
REQUIRE_CLUSTER_VARIABLE = "A2A_WIRE_REQUIRE_POSTGRES_CLUSTER"
MISSING = (
    f"no PostgreSQL server: set {DSN_VARIABLE} (e.g. postgresql://postgres@127.0.0.1:5432/test),"
    " or put initdb and pg_ctl on the PATH"
)
CLUSTER_MISSING = (
    "no PostgreSQL binaries for a throwaway cluster (the fault tests restart and stop it): set"
    f" {BIN_VARIABLE} (e.g. /usr/lib/postgresql/15/bin), or put initdb and pg_ctl on the PATH"
)


def new_schema() -> str:
    """A schema name no other test uses."""
    return f"t_{uuid.uuid4().hex[:16]}"


async def drop_schema(dsn: str, schema: str) -> None:
    """Drop ``schema`` and everything in it (it may not exist)."""
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    finally:
        await conn.close()


_SPARE: list[str] = []
"""Emptied schemas of the current layout, ready for the next :func:`migrated_schema` (this process)."""

_EMPTYING: list[str] = []
"""The statements that empty a schema of the current layout, ``{s}`` for its name (made once
from the catalog: every schema of one layout has the same tables and sequences)."""


async def _emptying(conn: asyncpg.Connection, schema: str) -> str:
    if not _EMPTYING:
        tables = await conn.fetch(
            "SELECT tablename FROM pg_tables WHERE schemaname = $1"
            " AND tablename <> 'schema_version' ORDER BY tablename",
            schema,
        )
        numbers = await conn.fetch(
            "SELECT sequencename FROM pg_sequences WHERE schemaname = $1", schema
        )
        _EMPTYING.extend(f"DELETE FROM {{s}}.{name}" for (name,) in tables)
        _EMPTYING.extend(f"SELECT setval('{{s}}.{name}', 1, false)" for (name,) in numbers)
    return ";".join(_EMPTYING).format(s=schema)


async def take_spare_schema(dsn: str, schema: str) -> None:
    """Give the new name ``schema`` to an emptied schema of the current layout, if one is spare.

    Otherwise nothing happens, and the first store opened on ``schema`` creates it.
    """
    if not _SPARE:
        return
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(f"ALTER SCHEMA {_SPARE.pop()} RENAME TO {schema}")
    finally:
        await conn.close()


async def recycle_schema(dsn: str, schema: str) -> None:
    """Empty a test's schema for the next test, or drop it if it has another layout.

    The stores on it must be closed: a store still writing would leave rows behind.
    """
    conn = await asyncpg.connect(dsn)
    try:
        table = await conn.fetchval("SELECT to_regclass($1)::text", f"{schema}.schema_version")
        version = table and await conn.fetchval(f"SELECT version FROM {table}")
        if version == SCHEMA_VERSION:
            await conn.execute(await _emptying(conn, schema))
            _SPARE.append(schema)
        else:
            await conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    except asyncpg.PostgresError:
        await conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    finally:
        await conn.close()


async def drop_spare_schemas(dsn: str) -> None:
    """Drop the emptied schemas no test took (the end of the session)."""
    while _SPARE:
        await drop_schema(dsn, _SPARE.pop())


def _binary(name: str) -> str | None:
    """Where the PostgreSQL program ``name`` is: in ``$A2A_WIRE_TEST_POSTGRES_BIN``, else the PATH."""
    folder = os.environ.get(BIN_VARIABLE)
    return shutil.which(name, path=folder) if folder else shutil.which(name)


@dataclass
class Cluster:
    """A throwaway PostgreSQL cluster in a temporary folder, stopped by :meth:`stop`."""

    folder: Path
    prefix: list[str]
    port: int
    options: str = ""

    @property
    def dsn(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    @classmethod
    def unavailable(cls, missing: str = MISSING) -> str | None:
        """Why no cluster can be made here (``missing`` says what to set), or ``None``."""
        if not (_binary("initdb") and _binary("pg_ctl")):
            return missing
        if os.geteuid() == 0 and not (_has_user("postgres") and shutil.which("runuser")):
            return f"{missing} (as root, a postgres user and runuser are needed too)"
        return None

    @classmethod
    def start(cls) -> Cluster:
        """Make and start a cluster; raises ``subprocess.CalledProcessError`` if that fails."""
        folder = Path(tempfile.mkdtemp(prefix="a2a-wire-pg-"))
        prefix: list[str] = []
        if os.geteuid() == 0:
            user = pwd.getpwnam("postgres")
            os.chown(folder, user.pw_uid, user.pw_gid)
            prefix = ["runuser", "-u", "postgres", "--"]
        cluster = cls(folder, prefix, free_port())
        data = folder / "data"
        cluster._run("initdb", "-D", str(data), "-A", "trust", "-U", "postgres", "--no-sync")
        cluster.options = (
            f"-c listen_addresses=127.0.0.1 -p {cluster.port} -k {folder}"
            " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        )
        cluster.start_server()
        return cluster

    def start_server(self) -> None:
        """Start the server again after :meth:`stop_server` (waits until it accepts)."""
        log = str(self.folder / "server.log")
        data = str(self.folder / "data")
        self._run("pg_ctl", "-D", data, "-l", log, "-o", self.options, "-w", "start")

    def stop_server(self) -> None:
        """Stop the server (``fast``: sessions are ended), keeping the cluster's data."""
        self._run("pg_ctl", "-D", str(self.folder / "data"), "-m", "fast", "-w", "stop")

    def restart(self) -> None:
        """``pg_ctl restart`` (``fast``): every session ends, the data stays."""
        data, log = str(self.folder / "data"), str(self.folder / "server.log")
        self._run(
            "pg_ctl", "-D", data, "-l", log, "-m", "fast", "-o", self.options, "-w", "restart"
        )

    def stop(self) -> None:
        """Stop the cluster and remove its folder."""
        try:
            self._run("pg_ctl", "-D", str(self.folder / "data"), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)

    def _run(self, program: str, *args: str) -> None:
        command = [*self.prefix, _binary(program) or program, *args]
        subprocess.run(command, check=True, capture_output=True, timeout=120)


def _has_user(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


async def deafen(store: PostgresTaskStore) -> Listener:
    """Make ``store``'s listening connection hear no notification from now on; its listener."""
    listener = store._listener
    assert listener is not None and listener._conn is not None
    await listener._conn.execute("UNLISTEN *")
    return listener
