"""The retention settings of ``serve``: ``[limits]`` keys that reach the server and its store."""

from __future__ import annotations

from pathlib import Path

import pytest

from a2a_wire.cli._app import build_store
from a2a_wire.cli.config import Config, ConfigError, load
from a2a_wire.server.store import InMemoryTaskStore, SQLiteTaskStore
from a2a_wire.types import Message, Part, Role, Task, TaskState, TaskStatus

LIMITS = """[server]
storage = "{storage}"

[limits]
terminal_retention_seconds = 60.0
interrupted_retention_seconds = 120.0
event_log_retention_seconds = 30.0
memory_max_tasks = 2
retention_interval_seconds = 5.0
max_history_per_task = 3
"""


def _load(tmp_path: Path, storage: str) -> Config:
    path = tmp_path / "retention.toml"
    path.write_text(LIMITS.format(storage=storage), encoding="utf-8")
    return load(path, data_dir=str(tmp_path / "data"))


def test_the_retention_keys_are_read(tmp_path: Path) -> None:
    got = _load(tmp_path, "memory").settings
    assert (
        got.terminal_retention_seconds,
        got.interrupted_retention_seconds,
        got.event_log_retention_seconds,
        got.memory_max_tasks,
        got.retention_interval_seconds,
    ) == (60.0, 120.0, 30.0, 2, 5.0)


async def test_the_memory_store_takes_the_cap(tmp_path: Path) -> None:
    store = build_store(_load(tmp_path, "memory"))
    assert isinstance(store, InMemoryTaskStore)
    await store.open()
    for i in range(3):
        done = TaskStatus(state=TaskState.COMPLETED)
        await store.create(Task(id=f"t{i}", context_id="c", status=done))
    assert await store.get("t0") is None  # the cap of 2 made room
    assert await store.get("t2") is not None


async def test_the_sqlite_store_takes_the_history_limit(tmp_path: Path) -> None:
    store = build_store(_load(tmp_path, "sqlite"))
    assert isinstance(store, SQLiteTaskStore)
    await store.open()
    try:
        working = TaskStatus(state=TaskState.WORKING)
        await store.create(Task(id="t", context_id="c", status=working))
        for i in range(5):
            note = Message(message_id=f"m{i}", role=Role.USER, parts=[Part(text=str(i))])
            await store.append("t", [note])
        task = await store.get("t")
        assert task is not None and [m.message_id for m in task.history] == ["m0", "m3", "m4"]
    finally:
        await store.close()


def test_retention_values_are_checked_at_their_lines(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text("[limits]\nmemory_max_tasks = 0\nevent_log_retention_seconds = -1.0\n")
    with pytest.raises(ConfigError) as info:
        load(path)
    assert str(info.value).splitlines() == [
        f"{path}:2: limits.memory_max_tasks: must be positive, not 0",
        f"{path}:3: limits.event_log_retention_seconds: must be positive, not -1.0",
    ]
