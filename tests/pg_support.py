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

Each test works in a schema of its own (:func:`new_schema`) and drops it (:func:`drop_schema`).
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

import asyncpg

DSN_VARIABLE = "A2A_WIRE_TEST_POSTGRES_DSN"
REQUIRE_VARIABLE = "A2A_WIRE_REQUIRE_POSTGRES"
MISSING = (
    f"no PostgreSQL server: set {DSN_VARIABLE} (e.g. postgresql://postgres@127.0.0.1:5432/test),"
    " or put initdb and pg_ctl on the PATH"
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


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (at this moment)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Cluster:
    """A throwaway PostgreSQL cluster in a temporary folder, stopped by :meth:`stop`."""

    folder: Path
    prefix: list[str]
    port: int

    @property
    def dsn(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    @classmethod
    def unavailable(cls) -> str | None:
        """Why no cluster can be made here, or ``None`` if one can."""
        if not (shutil.which("initdb") and shutil.which("pg_ctl")):
            return MISSING
        if os.geteuid() == 0 and not (_has_user("postgres") and shutil.which("runuser")):
            return f"{MISSING} (as root, a postgres user and runuser are needed too)"
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
        options = (
            f"-c listen_addresses=127.0.0.1 -p {cluster.port} -k {folder}"
            " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        )
        log = str(folder / "server.log")
        cluster._run("pg_ctl", "-D", str(data), "-l", log, "-o", options, "-w", "start")
        return cluster

    def stop(self) -> None:
        """Stop the cluster and remove its folder."""
        try:
            self._run("pg_ctl", "-D", str(self.folder / "data"), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)

    def _run(self, *command: str) -> None:
        subprocess.run([*self.prefix, *command], check=True, capture_output=True, timeout=120)


def _has_user(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True
