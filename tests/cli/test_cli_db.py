"""``a2a-wire db migrate`` on a real PostgreSQL server (tests/conftest.py ``postgres_dsn``)."""

from __future__ import annotations

from pathlib import Path

import asyncpg
from e2e_support import cli_async, environment
from ports import free_port

from a2a_wire.server.store.postgresql._schema import SCHEMA_VERSION


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


async def test_migrate_reads_the_postgresql_table_of_a_config(
    postgres_dsn: str, postgres_schema: str, tmp_path: Path
) -> None:
    config = tmp_path / "serve.toml"
    config.write_text(
        f'[server]\nstorage = "postgresql"\n\n[postgresql]\ndsn_env = "TASKS_DB"\n'
        f'schema = "{postgres_schema}"\n',
        encoding="utf-8",
    )
    env = environment(TASKS_DB=postgres_dsn)
    code, out, err = await cli_async("db", "migrate", "--config", str(config), env=env)
    assert code == 0, err
    assert out == f"schema {postgres_schema!r} created at version {SCHEMA_VERSION}\n"
    code, out, err = await cli_async("db", "migrate", env={**env, "A2A_WIRE_CONFIG": str(config)})
    assert code == 0 and "nothing to do" in out, err


async def test_migrate_flags_win_over_the_config(
    postgres_dsn: str, postgres_schema: str, tmp_path: Path
) -> None:
    config = tmp_path / "serve.toml"
    nowhere = f"postgresql://postgres@127.0.0.1:{free_port()}/test"
    config.write_text(f'[postgresql]\ndsn = "{nowhere}"\nschema = "elsewhere"\n', encoding="utf-8")
    args = ("db", "migrate", "--config", str(config))
    code, out, err = await cli_async(*args, "--dsn", postgres_dsn, "--schema", postgres_schema)
    assert code == 0, err
    assert out == f"schema {postgres_schema!r} created at version {SCHEMA_VERSION}\n"
    code, _, err = await cli_async(*args)  # the file's own address: nothing listens there
    assert code == 3 and "cannot connect" in err


async def test_migrate_refuses_an_invalid_config_and_no_address(tmp_path: Path) -> None:
    config = tmp_path / "serve.toml"
    config.write_text('[postgresql]\nschema = "Not-A-Name"\npool = 3\n', encoding="utf-8")
    code, _, err = await cli_async("db", "migrate", "--config", str(config))
    assert code == 6, err
    assert err.splitlines()[0] == f"error: invalid configuration {config}"
    assert len(err.splitlines()) == 3, err  # the schema name and the unknown key
    config.write_text("[server]\nport = 9000\n", encoding="utf-8")
    code, _, err = await cli_async("db", "migrate", "--config", str(config))
    assert code == 2 and "no PostgreSQL address" in err and "$A2A_WIRE_DSN" in err


async def test_migrate_against_a_locked_schema_ends_within_the_lock_timeout(
    postgres_dsn: str, postgres_schema: str, tmp_path: Path
) -> None:
    code, _, err = await cli_async(
        "db", "migrate", "--dsn", postgres_dsn, "--schema", postgres_schema
    )
    assert code == 0, err
    config = tmp_path / "serve.toml"
    config.write_text(
        f'[postgresql]\nschema = "{postgres_schema}"\nmigration_lock_timeout_seconds = 1.0\n',
        encoding="utf-8",
    )
    admin = await asyncpg.connect(postgres_dsn)
    try:
        async with admin.transaction():
            await admin.execute(
                f"LOCK TABLE {postgres_schema}.schema_version IN ACCESS EXCLUSIVE MODE"
            )
            code, _, err = await cli_async(
                "db", "migrate", "--config", str(config), "--dsn", postgres_dsn
            )
    finally:
        await admin.close()
    assert code == 1
    assert "LockNotAvailableError" in err and "migration_lock_timeout_seconds" in err
