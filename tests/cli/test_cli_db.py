"""``a2a-wire db migrate`` on a real PostgreSQL server (tests/conftest.py ``postgres_dsn``)."""

from __future__ import annotations

import asyncpg
from e2e_support import cli_async
from pg_support import free_port

from a2a_wire.server.store._log_postgres_ddl import SCHEMA_VERSION


async def test_migrate_creates_the_schema_then_finds_it_current(
    postgres_dsn: str, postgres_schema: str
) -> None:
    args = ("db", "migrate", "--dsn", postgres_dsn, "--schema", postgres_schema)
    code, out, err = await cli_async(*args)
    assert code == 0, err
    assert f"schema {postgres_schema!r} created at version {SCHEMA_VERSION}" in out
    code, out, err = await cli_async(*args)
    assert code == 0, err
    assert "nothing to do" in out
    conn = await asyncpg.connect(postgres_dsn)
    try:
        version = await conn.fetchval(f"SELECT version FROM {postgres_schema}.schema_version")
        assert version == SCHEMA_VERSION
        await conn.execute(f"UPDATE {postgres_schema}.schema_version SET version = 99")
    finally:
        await conn.close()
    code, out, err = await cli_async(*args)
    assert code == 1 and "newer" in err


async def test_migrate_reports_a_bad_schema_name_and_a_server_that_is_not_there() -> None:
    code, _, err = await cli_async("db", "migrate", "--dsn", "postgresql://x/y", "--schema", "A-b")
    assert code == 2 and "schema name" in err
    nowhere = f"postgresql://postgres@127.0.0.1:{free_port()}/test"
    code, _, err = await cli_async("db", "migrate", "--dsn", nowhere)
    assert code == 3 and "cannot connect" in err
    code, _, err = await cli_async("db", "migrate")
    assert code == 2 and "--dsn" in err
