"""Micro-benchmark: the cost of one streamed artifact chunk in the stores, by artifact length.

Run ``.venv/bin/python benchmarks/store_log.py`` (about a minute) or ``--quick`` for a smoke run.

For N = 100, 1,000 and 10,000, one task gets one artifact as N ``append=true`` chunks of 32
bytes, each its own store call as an executor turn makes it, then a COMPLETED status (which
folds the log). It is measured on the event log stores (``InMemoryTaskStore``,
``SQLiteTaskStore``: ``append``) and, as the reference in the same run, on the model they
replaced, kept here (:class:`RewriteMemory`, :class:`RewriteSQLite`): apply the chunk to the
live task, then rewrite the whole task (in memory its encoding, in SQLite one UPDATE of its row,
WAL and ``synchronous=NORMAL`` as the stores). Printed per chunk: process CPU
(every thread, so aiosqlite's too) and, for SQLite, bytes written: ``write_bytes`` (bytes sent
towards the storage layer, counted when a page is first dirtied) and ``wchar`` (bytes passed to
``write()``) from ``/proc/self/io``. The last table gives N = 10,000 over N = 100 per metric; the
issue's target for the event log stores is 1.5x or less (exit status 1 when missed). The database lives in ``--dir`` (a
temporary directory by default; on tmpfs ``write_bytes`` stays 0). The reference SQLite store
rewrites the task per chunk, so its cost grows with N; ``--reference-max`` caps the N it runs.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import gc
import os
import platform
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiosqlite

from a2a_wire import codec
from a2a_wire._protocol.tasks import apply, now_timestamp
from a2a_wire.server.store import EventLogStore, InMemoryTaskStore, SQLiteTaskStore
from a2a_wire.types import (
    Artifact,
    Message,
    Part,
    Role,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)

SIZES = (100, 1_000, 10_000)
CHUNK = "0123456789abcdefghijklmnopqrstuv"  # 32 bytes
TARGET = 1.5
WARM_UP = 50

Opener = Callable[[int], Awaitable[Any]]
"""Opens a fresh store for a run of size N."""


@dataclass(frozen=True)
class Result:
    cpu: float
    write_bytes: int
    wchar: int


def io_counters() -> tuple[int, int]:
    """(write_bytes, wchar) of this process, or zeros where /proc is missing."""
    try:
        fields = dict(line.split(": ") for line in Path("/proc/self/io").read_text().splitlines())
    except OSError:
        return 0, 0
    return int(fields["write_bytes"]), int(fields["wchar"])


def new_task(task_id: str) -> Task:
    first = Message(message_id="m1", role=Role.USER, parts=[Part(text="stream it")])
    first.task_id, first.context_id = task_id, "ctx"
    status = TaskStatus(state=TaskState.WORKING, timestamp=now_timestamp())
    return Task(id=task_id, context_id="ctx", status=status, history=[first])


def chunk(i: int, n: int) -> TaskArtifactUpdateEvent:
    artifact = Artifact(artifact_id="out", parts=[Part(text=CHUNK)])
    return TaskArtifactUpdateEvent(artifact=artifact, append=i > 0, last_chunk=i == n - 1)


def done() -> TaskStatusUpdateEvent:
    return TaskStatusUpdateEvent(status=TaskStatus(state=TaskState.COMPLETED))


class RewriteMemory:
    """The reference in memory: each change re-encodes and keeps the whole task."""

    def __init__(self) -> None:
        self._bodies: dict[str, bytes] = {}

    async def open(self) -> None:
        pass

    async def close(self) -> None:
        pass

    async def create(self, task: Task) -> None:
        self._bodies[task.id] = codec.encode(task)

    async def update(self, task: Task) -> None:
        self._bodies[task.id] = codec.encode(task)

    async def get(self, task_id: str) -> Task | None:
        body = self._bodies.get(task_id)
        return None if body is None else codec.decode(Task, body)


class RewriteSQLite(RewriteMemory):
    """The reference in SQLite: each change is one UPDATE of the task's whole row."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self._path = path
        self._db: aiosqlite.Connection | None = None

    @property
    def db(self) -> aiosqlite.Connection:
        assert self._db is not None, "open() first"
        return self._db

    async def open(self) -> None:
        self._db = await aiosqlite.connect(self._path, isolation_level=None)
        for pragma in ("journal_mode = WAL", "synchronous = NORMAL"):
            await self.db.execute_fetchall(f"PRAGMA {pragma}")
        await self.db.execute_fetchall("CREATE TABLE tasks (id TEXT PRIMARY KEY, body BLOB)")

    async def close(self) -> None:
        if self._db is not None:
            await self._db.close()

    async def create(self, task: Task) -> None:
        row = (task.id, codec.encode(task))
        await self.db.execute_fetchall("INSERT INTO tasks VALUES (?, ?)", row)

    async def update(self, task: Task) -> None:
        row = (codec.encode(task), task.id)
        await self.db.execute_fetchall("UPDATE tasks SET body = ? WHERE id = ?", row)

    async def get(self, task_id: str) -> Task | None:
        rows = list(
            await self.db.execute_fetchall("SELECT body FROM tasks WHERE id = ?", (task_id,))
        )
        return codec.decode(Task, rows[0][0]) if rows else None


async def run_log(store: EventLogStore, n: int) -> None:
    for i in range(n):
        await store.append("t", [chunk(i, n)])
    await store.append("t", [done()])


async def run_reference(store: RewriteMemory, task: Task, n: int) -> None:
    for i in range(n):
        apply(task, chunk(i, n), now=now_timestamp())
        await store.update(task)
    apply(task, done(), now=now_timestamp())
    await store.update(task)


async def measure(opener: Opener, n: int, log: bool) -> Result:
    """Create the task (not measured), stream N chunks and complete it; check the artifact."""
    store = await opener(n)
    try:
        task = new_task("t")
        await store.create(task)
        gc.collect()
        bytes_before, wchar_before = io_counters()
        cpu_before = time.process_time()
        await (run_log(store, n) if log else run_reference(store, task, n))
        cpu = time.process_time() - cpu_before
        bytes_after, wchar_after = io_counters()
        stored = await store.get("t")
        assert stored is not None and stored.status is not None
        assert stored.status.state == TaskState.COMPLETED
        assert [p.text for p in stored.artifacts[0].parts] == [CHUNK] * n
    finally:
        await store.close()
    return Result(cpu / n, (bytes_after - bytes_before) // n, (wchar_after - wchar_before) // n)


def openers(directory: Path) -> dict[str, tuple[bool, Opener]]:
    """Store name -> (is an event log store, coroutine opening a fresh one for size N)."""

    async def log_memory(n: int) -> EventLogStore:
        store = InMemoryTaskStore()
        await store.open()
        return store

    async def log_sqlite(n: int) -> EventLogStore:
        store = SQLiteTaskStore(directory / f"log-{n}.sqlite3")
        await store.open()
        return store

    async def task_memory(n: int) -> RewriteMemory:
        store = RewriteMemory()
        await store.open()
        return store

    async def task_sqlite(n: int) -> RewriteMemory:
        store = RewriteSQLite(directory / f"tasks-{n}.sqlite3")
        await store.open()
        return store

    return {
        "log memory": (True, log_memory),
        "log sqlite": (True, log_sqlite),
        "reference memory": (False, task_memory),
        "reference sqlite": (False, task_sqlite),
    }


def header() -> None:
    now = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    print(f"date:     {now}")
    print(f"machine:  {platform.platform()}, {platform.machine()}, {os.cpu_count()} CPUs")
    print(f"python:   {platform.python_implementation()} {platform.python_version()}")
    print(f"workload: one artifact of N append=true chunks of {len(CHUNK)} bytes, then COMPLETED")
    print("reference: apply + rewrite the whole task per chunk (the model the log replaced)")
    print()


async def main(sizes: tuple[int, ...], reference_max: int, directory: Path, judge: bool) -> int:
    header()
    results: dict[tuple[str, int], Result] = {}
    print(f"{'store':<18}{'N':>8}{'CPU µs/chunk':>14}{'write_bytes/chunk':>19}{'wchar/chunk':>13}")
    for name, (log, opener) in openers(directory).items():
        await measure(opener, WARM_UP, log)  # imports, statement caches, allocator
        for n in sizes:
            if not log and n > reference_max:
                print(f"{name:<18}{n:>8}   skipped (over --reference-max {reference_max})")
                continue
            result = await measure(opener, n, log)
            results[name, n] = result
            written = f"{result.write_bytes:>19,}" if "sqlite" in name else f"{'-':>19}"
            wchar = f"{result.wchar:>13,}" if "sqlite" in name else f"{'-':>13}"
            print(f"{name:<18}{n:>8}{result.cpu * 1e6:>14.1f}{written}{wchar}", flush=True)
    return report(results, sizes, judge)


def report(results: dict[tuple[str, int], Result], sizes: tuple[int, ...], judge: bool) -> int:
    """Print the ratios of the largest N over the smallest; 1 if an event log store misses.

    Without ``judge`` (a smoke run, too short to be steady) the ratios are shown, not judged.
    """
    low, high = sizes[0], sizes[-1]
    print()
    print(f"ratio N={high:,} / N={low:,} (target for the log stores: {TARGET}x or less)")
    missed = 0
    for name in ("log memory", "log sqlite", "reference memory", "reference sqlite"):
        if (name, low) not in results or (name, high) not in results:
            continue
        a, b = results[name, low], results[name, high]
        ratios = [("CPU", b.cpu / a.cpu)]
        if "sqlite" in name:
            ratios += [
                ("write_bytes", b.write_bytes / a.write_bytes if a.write_bytes else float("nan")),
                ("wchar", b.wchar / a.wchar if a.wchar else float("nan")),
            ]
        text = "  ".join(f"{what} {ratio:.2f}x" for what, ratio in ratios)
        verdict = ""
        if judge and name.startswith("log"):
            ok = all(ratio <= TARGET for what, ratio in ratios if ratio == ratio)
            verdict = "  ok" if ok else "  MISSED"
            missed += not ok
        print(f"  {name:<18}{text}{verdict}")
    return 1 if missed else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="N = 20 and 200 only, not judged (smoke run)"
    )
    parser.add_argument("--reference-max", type=int, default=10_000, metavar="N")
    parser.add_argument("--dir", type=Path, default=None, help="where the database files go")
    args = parser.parse_args()
    chosen = (20, 200) if args.quick else SIZES
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        sys.exit(asyncio.run(main(chosen, args.reference_max, Path(tmp), not args.quick)))
