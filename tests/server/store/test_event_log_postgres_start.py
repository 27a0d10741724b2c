"""A start against a database that stalls or is locked ends, within its deadline, with a message.

``open`` runs four steps (connect, the schema check, listening, registering the process); each
is bounded by a named deadline, and a fault in one of them raises ``StoreUnavailableError``
naming the step, the setting that bounded it and what to do. The faults are real: a TCP proxy
that stops forwarding (:class:`~fault_proxy.FaultProxy`) and locks held by a connection of the
test. The CLI test starts ``a2a-wire serve`` against a locked schema and reads its exit.
"""

from __future__ import annotations

import asyncio
import subprocess
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import asyncpg
import pytest
from e2e_support import PYTHON, environment
from fault_proxy import FaultProxy, through
from ports import free_port

from a2a_wire.server.store import PostgresTaskStore, StoreUnavailableError

DEADLINE = 1.0
"""Each deadline of the stores here (seconds)."""

SLACK = 2.0
"""What a start may take beyond the deadline that bounds it (a busy machine)."""


def make_store(dsn: str, schema: str, **options: Any) -> PostgresTaskStore:
    for name in ("statement_timeout", "connect_timeout", "acquire_timeout"):
        options.setdefault(name, DEADLINE)
    options.setdefault("migration_lock_timeout", DEADLINE)
    return PostgresTaskStore(dsn, schema=schema, heartbeat_seconds=None, **options)


async def refused(store: PostgresTaskStore) -> tuple[str, float]:
    """The message ``store.open()`` fails with, and the seconds it took."""
    started = time.monotonic()
    with pytest.raises(StoreUnavailableError) as raised:
        async with asyncio.timeout(60):  # a start that hangs fails here, not for ever
            await store.open()
    assert raised.value.__cause__ is not None
    return raised.value.message, time.monotonic() - started


async def created(dsn: str, schema: str) -> None:
    store = make_store(dsn, schema)
    await store.open()
    await store.close()


async def test_a_stalled_connection_at_start_fails_within_the_connect_timeout(
    proxy: FaultProxy, postgres_dsn: str, postgres_schema: str
) -> None:
    await created(postgres_dsn, postgres_schema)
    proxy.stall()
    message, took = await refused(make_store(through(proxy, postgres_dsn), postgres_schema))
    print(f"stalled start: {took:.2f} s: {message}")
    assert DEADLINE * 0.9 <= took < DEADLINE + SLACK
    assert "could not connect (TimeoutError)" in message
    assert "connect_timeout_seconds (1 s)" in message


async def test_a_refused_connection_at_start_says_so_and_names_no_deadline(
    postgres_dsn: str, postgres_schema: str
) -> None:
    where = urlsplit(postgres_dsn)
    nobody = where._replace(netloc=f"{where.username}@127.0.0.1:{free_port()}").geturl()
    message, took = await refused(make_store(nobody, postgres_schema))
    print(f"refused start: {took:.2f} s: {message}")
    assert "could not connect (ConnectionRefusedError" in message
    assert "accepts connections" in message
    assert "waited" not in message and "lock" not in message


async def test_a_locked_version_table_fails_within_the_migration_lock_timeout(
    postgres_dsn: str, postgres_schema: str, admin: asyncpg.Connection
) -> None:
    await created(postgres_dsn, postgres_schema)
    lock = 2.0
    async with admin.transaction():
        await admin.execute(f"LOCK TABLE {postgres_schema}.schema_version IN ACCESS EXCLUSIVE MODE")
        store = make_store(postgres_dsn, postgres_schema, migration_lock_timeout=lock)
        message, took = await refused(store)
    print(f"locked start: {took:.2f} s: {message}")
    assert lock * 0.9 <= took < lock + SLACK
    assert "could not check or migrate the schema (LockNotAvailableError" in message
    assert "migration_lock_timeout_seconds (2 s)" in message
    again = make_store(postgres_dsn, postgres_schema)  # released: it opens
    await again.open()
    await again.close()


async def test_another_process_migrating_makes_the_start_wait_the_lock_timeout_only(
    postgres_dsn: str, postgres_schema: str, admin: asyncpg.Connection
) -> None:
    from a2a_wire.server.store.postgresql._schema import lock_key

    await created(postgres_dsn, postgres_schema)
    async with admin.transaction():  # what a migrating process holds
        await admin.execute(
            "SELECT pg_advisory_xact_lock($1)", lock_key(postgres_schema, "migrate")
        )
        message, took = await refused(make_store(postgres_dsn, postgres_schema))
    assert took < DEADLINE + SLACK
    assert "migration_lock_timeout_seconds" in message


async def test_a_connection_that_stalls_during_the_schema_check_is_bounded_too(
    proxy: FaultProxy, postgres_dsn: str, postgres_schema: str, admin: asyncpg.Connection
) -> None:
    from a2a_wire.server.store.postgresql._schema import lock_key

    await created(postgres_dsn, postgres_schema)
    lock = 2.0
    store = make_store(through(proxy, postgres_dsn), postgres_schema, migration_lock_timeout=lock)
    async with admin.transaction():  # the check waits for this lock; then the network stalls
        await admin.execute(
            "SELECT pg_advisory_xact_lock($1)", lock_key(postgres_schema, "migrate")
        )
        opening = asyncio.ensure_future(refused(store))
        waiting = "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
        async with asyncio.timeout(60):
            while not await admin.fetchval(waiting):
                await asyncio.sleep(0.01)
        proxy.stall()  # the lock timeout's answer never comes back
        message, took = await opening
    print(f"stalled during the schema check: {took:.2f} s: {message}")
    assert took < lock + DEADLINE + DEADLINE + SLACK  # the wait, the statement, the close
    # Whichever step of the start meets the stall first names it: the schema check waiting for
    # its answer, or a connection the start opens beside it (on a busy machine that one can
    # still be connecting when the network stalls). Either way a timeout, named as such.
    assert (
        "could not check or migrate the schema (TimeoutError)" in message
        or "could not connect (TimeoutError)" in message
    ), message


async def test_a_locked_table_after_the_schema_check_fails_within_the_statement_timeout(
    postgres_dsn: str, postgres_schema: str, admin: asyncpg.Connection
) -> None:
    await created(postgres_dsn, postgres_schema)
    async with admin.transaction():  # registering the process writes this table
        await admin.execute(f"LOCK TABLE {postgres_schema}.processes IN ACCESS EXCLUSIVE MODE")
        message, took = await refused(make_store(postgres_dsn, postgres_schema))
    print(f"locked processes table: {took:.2f} s: {message}")
    assert took < 2 * DEADLINE + SLACK  # the old leases' end and the first heartbeat at most
    assert "could not register and take over" in message
    assert "statement_timeout_seconds (1 s) for each of its statements" in message


CONFIG = """
[server]
port = 0
storage = "postgresql"
data_dir = "{data}"

[postgresql]
dsn_env = "TEST_TASKS_DSN"
schema = "{schema}"
connect_timeout_seconds = 1.0
statement_timeout_seconds = 1.0
migration_lock_timeout_seconds = {lock}
"""


async def test_serve_against_a_locked_schema_exits_1_with_what_it_waited_for(
    tmp_path: Path, postgres_dsn: str, postgres_schema: str, admin: asyncpg.Connection
) -> None:
    await created(postgres_dsn, postgres_schema)
    config = tmp_path / "serve.toml"
    lock = 2.0
    text = CONFIG.format(data=tmp_path / "data", schema=postgres_schema, lock=lock)
    config.write_text(text, encoding="utf-8")
    env = environment(TEST_TASKS_DSN=postgres_dsn)
    async with admin.transaction():
        await admin.execute(f"LOCK TABLE {postgres_schema}.schema_version IN ACCESS EXCLUSIVE MODE")
        started = time.monotonic()
        done = await asyncio.to_thread(
            subprocess.run,
            [PYTHON, "-m", "a2a_wire", "serve", "--config", str(config)],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        took = time.monotonic() - started
    print(f"serve against a locked schema: exit {done.returncode} after {took:.2f} s")
    print(done.stderr)
    assert done.returncode == 1
    assert took < lock + 10  # the interpreter's start on a busy machine included
    assert "error: cannot start: cannot open the task store: PostgreSQL: could not" in done.stderr
    assert "migration_lock_timeout_seconds (2 s)" in done.stderr
    assert "Traceback" not in done.stderr
