"""``[postgresql]`` and ``storage = "postgresql"``: read, checked at their lines, built into a store.

The store is opened against a real PostgreSQL server (tests/conftest.py ``postgres_dsn``).
"""

from __future__ import annotations

from pathlib import Path

import asyncpg
import pytest

from a2a_wire.cli._app import (
    build_postgres_store,
    build_store,
)
from a2a_wire.cli.config import ConfigError, PostgresSection, load
from a2a_wire.server.store import PostgresTaskStore, TaskQuery

SECRET = "postgresql://a2a:hunter2@db.example:5432/tasks"


def _problems(path: Path) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load(path)
    return [issue.render(path.name) for issue in caught.value.issues]


def test_defaults_and_the_dsn_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert load(None, data_dir=str(tmp_path)).postgresql == PostgresSection()
    monkeypatch.setenv("A2A_WIRE_DSN", SECRET)
    path = tmp_path / "serve.toml"
    path.write_text('[server]\nstorage = "postgresql"\n', encoding="utf-8")
    config = load(path)
    assert config.server.storage == "postgresql"
    assert config.postgresql.address() == SECRET
    path.write_text(
        '[server]\nstorage = "postgresql"\n\n[postgresql]\ndsn_env = "TASKS_DB"\n'
        'schema = "tasks_1"\npool_size = 3\npoll_interval_seconds = 0.25\n'
        "lease_seconds = 4\nheartbeat_seconds = 0.5\nconnect_timeout_seconds = 2\n"
        "statement_timeout_seconds = 1.5\nacquire_timeout_seconds = 3\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("TASKS_DB", "host=db user=a2a")
    section = load(path).postgresql
    assert (section.schema, section.pool_size, section.poll_interval_seconds) == (
        "tasks_1",
        3,
        0.25,
    )
    assert (section.lease_seconds, section.heartbeat_seconds) == (4.0, 0.5)
    timeouts = (
        section.connect_timeout_seconds,
        section.statement_timeout_seconds,
        section.acquire_timeout_seconds,
    )
    assert timeouts == (2.0, 1.5, 3.0)
    assert section.address() == "host=db user=a2a"


def test_a_missing_variable_is_reported_at_its_line_without_any_dsn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("A2A_WIRE_DSN", raising=False)
    path = tmp_path / "serve.toml"
    path.write_text('[server]\nport = 1\nstorage = "postgresql"\n', encoding="utf-8")
    (only,) = _problems(path)
    assert only.startswith("serve.toml:3: server.storage: environment variable A2A_WIRE_DSN")
    path.write_text(
        '[server]\nstorage = "postgresql"\n[postgresql]\nschema = "x"\ndsn_env = "NOPE_DSN"\n',
        encoding="utf-8",
    )
    monkeypatch.setenv("NOPE_DSN", SECRET.replace("postgresql://", "mysql://"))
    (only,) = _problems(path)
    assert only.startswith("serve.toml:5: postgresql.dsn_env: environment variable NOPE_DSN")
    assert "hunter2" not in only


def test_every_problem_of_the_section_at_its_line(tmp_path: Path) -> None:
    path = tmp_path / "serve.toml"
    path.write_text(
        '[server]\nstorage = "sqlite"\n\n[postgresql]\n'
        'dsn = "hunter2"\n'  # 5: neither a URL nor key=value
        'dsn_env = "DB"\n'  # 6: with dsn
        'schema = "Tasks"\n'  # 7
        "pool_size = 0\n"  # 8
        "poll_interval_seconds = 0\n"  # 9
        "pool = 3\n"  # 10
        "lease_seconds = 2\n"
        "heartbeat_seconds = 2\n"  # 12: not below the lease
        "statement_timeout_seconds = 0\n",  # 13
        encoding="utf-8",
    )
    problems = _problems(path)
    assert [p.split(":", 2)[1] for p in problems] == ["5", "6", "7", "8", "9", "10", "12", "13"]
    assert "postgresql.statement_timeout_seconds: must be positive" in problems[7]
    assert (
        "postgresql.heartbeat_seconds: heartbeat_seconds must be below lease_seconds"
        in (problems[6])
    )
    assert "postgresql.dsn: must be a postgresql:// URL or a libpq key=value string" in problems[0]
    assert "set dsn or dsn_env, not both" in problems[1]
    assert "'Tasks' must be lower-case" in problems[2]
    assert "postgresql.pool_size: must be >= 1, not 0" in problems[3]
    assert "postgresql.poll_interval_seconds: must be positive" in problems[4]
    assert "postgresql.pool: unknown key" in problems[5]
    assert not any("hunter2" in p for p in problems)


def test_the_dsn_stays_out_of_repr() -> None:
    assert "hunter2" not in repr(PostgresSection(dsn=SECRET))


def test_storage_postgresql_builds_the_postgresql_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("A2A_WIRE_DSN", SECRET)
    path = tmp_path / "serve.toml"
    path.write_text('[server]\nstorage = "postgresql"\n', encoding="utf-8")
    store = build_store(load(path, data_dir=str(tmp_path / "data")))
    assert isinstance(store, PostgresTaskStore)


async def test_the_store_built_from_the_section_serves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, postgres_dsn: str, postgres_schema: str
) -> None:
    monkeypatch.setenv("TEST_TASKS_DSN", postgres_dsn)
    path = tmp_path / "serve.toml"
    path.write_text(
        '[server]\nstorage = "postgresql"\ndata_dir = "data"\n\n'
        f'[postgresql]\ndsn_env = "TEST_TASKS_DSN"\nschema = "{postgres_schema}"\npool_size = 2\n'
        "lease_seconds = 6.5\nheartbeat_seconds = 1.5\nstatement_timeout_seconds = 2.5\n",
        encoding="utf-8",
    )
    store = build_postgres_store(load(path))
    assert (store._lease_seconds, store._heartbeat_seconds) == (6.5, 1.5)
    assert (store._deadlines.statement, store._beat_deadline) == (2.5, 1.5)
    assert (tmp_path / "data" / "page-token.key").stat().st_mode & 0o777 == 0o600
    assert await store.open() == []
    try:
        assert (await store.list(TaskQuery())).tasks == []
    finally:
        await store.close()
    conn = await asyncpg.connect(postgres_dsn)
    try:
        tables = await conn.fetchval(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = $1",
            postgres_schema,
        )
    finally:
        await conn.close()
    assert tables >= 5
