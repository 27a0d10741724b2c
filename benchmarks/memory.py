"""Memory benchmark: create many completed tasks in the SQLite store and watch the server's RSS.

Run ``.venv/bin/python benchmarks/memory.py --tasks 100000`` (about a minute on 2 cores) or with
a small ``--tasks`` for a smoke run. a2a_wire's server (benchmarks/_servers.py ``ours-sqlite``,
the trivial agent, the default SQLite store) runs pinned to CPU 0; this process sends blocking
SendMessage calls from CPU 1 at concurrency 16, checking every answer (a completed task with its
artifact), in 20 equal steps. After each step it prints the server's RSS and the size of the
database on disk (the file plus its WAL). At the end a ListTasks call must count exactly the
tasks created.

The server must not keep finished tasks in memory: once the first tasks have warmed its caches
(the settle point, 10 % of the run but at least 2,000 tasks), RSS must stay flat. The run fails
(exit status 1) on any error, a wrong task count, or RSS growth after the settle point beyond
``--max-growth-mb`` (default 8 MB, a bound a leak of even 100 bytes per task breaks at 100,000
tasks).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
import orjson
from server import Server, pin_load_generator, running
from server_load import HEADERS, SEND, new_session, run_load

STEPS = 20
CONCURRENCY = 16
MB = 2**20


def _disk(db: Path) -> int:
    return sum(p.stat().st_size for p in db.parent.glob(db.name + "*"))


async def _count_tasks(session: aiohttp.ClientSession, url: str) -> int:
    call = {"jsonrpc": "2.0", "id": "count", "method": "ListTasks", "params": {"pageSize": 1}}
    async with session.post(url, data=orjson.dumps(call), headers=HEADERS) as response:
        answer = orjson.loads(await response.read())
    return int(answer["result"]["totalSize"])


async def fill(server: Server, db: Path, tasks: int) -> tuple[list[tuple[int, int, int]], int, int]:
    """Create ``tasks`` tasks in :data:`STEPS` steps.

    Returns:
        (tasks so far, RSS, bytes on disk) after each step, the error count, and the number of
        tasks the store reports.
    """
    rows: list[tuple[int, int, int]] = []
    errors = done = 0
    _, rss = server.stats()
    rows.append((0, rss or 0, _disk(db)))
    print(f"{'tasks':>9} {'RSS MB':>8} {'disk MB':>8} {'req/s':>7}", flush=True)
    print(f"{0:>9,} {(rss or 0) / MB:>8.1f} {_disk(db) / MB:>8.1f} {'':>7}", flush=True)
    async with new_session(CONCURRENCY) as session:
        for step in range(STEPS):
            size = tasks * (step + 1) // STEPS - done
            load = await run_load(session, server.url, SEND, CONCURRENCY, 3600.0, count=size)
            errors += load.errors
            for sample in load.samples:
                print(f"  error: {sample}")
            done += load.requests
            _, rss = server.stats()
            rows.append((done, rss or 0, _disk(db)))
            rate = load.requests / load.elapsed if load.elapsed else 0.0
            print(
                f"{done:>9,} {(rss or 0) / MB:>8.1f} {_disk(db) / MB:>8.1f} {rate:>7,.0f}",
                flush=True,
            )
        stored = await _count_tasks(session, server.url)
    return rows, errors, stored


def verdict(rows: list[tuple[int, int, int]], tasks: int, max_growth_mb: float) -> bool:
    """Print the RSS growth after the settle point; whether it is within bounds."""
    settle = max(2_000, tasks // 10)
    base = next(((n, rss) for n, rss, _ in rows if n >= settle), rows[-1][:2])
    end_n, end_rss, end_disk = rows[-1]
    growth = (end_rss - base[1]) / MB
    peak = max(rss for n, rss, _ in rows if n >= base[0]) / MB
    print()
    print(f"settle point: {base[0]:,} tasks, RSS {base[1] / MB:.1f} MB")
    print(
        f"end:          {end_n:,} tasks, RSS {end_rss / MB:.1f} MB (peak after settle {peak:.1f} MB)"
    )
    print(f"RSS growth after the settle point: {growth:+.1f} MB (limit {max_growth_mb:g} MB)")
    if end_n:
        print(f"on disk: {end_disk / MB:.1f} MB, {end_disk / end_n:,.0f} bytes per task")
    return growth <= max_growth_mb and (peak - base[1] / MB) <= max_growth_mb


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=100_000, help="tasks to create")
    parser.add_argument("--max-growth-mb", type=float, default=8.0, help="RSS growth allowed")
    args = parser.parse_args()
    if args.tasks < STEPS:
        parser.error(f"--tasks must be at least {STEPS}")
    pin = pin_load_generator()
    now = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    print(f"date:     {now}")
    print(
        f"machine:  {platform.platform()}, {os.cpu_count()} CPUs, python {platform.python_version()}"
    )
    print(
        f"run:      {args.tasks:,} blocking SendMessage calls at concurrency {CONCURRENCY}, ours-sqlite"
    )
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="a2a-memory-") as tmp:
        db = Path(tmp, "tasks.db")
        with running("ours-sqlite", pin, db) as server:
            rows, errors, stored = asyncio.run(fill(server, db, args.tasks))
    flat = verdict(rows, args.tasks, args.max_growth_mb)
    print(f"tasks stored: {stored:,} (expected {args.tasks:,})")
    print(f"errors: {errors}")
    print(f"time: {time.perf_counter() - started:.1f} s")
    ok = errors == 0 and stored == args.tasks and flat
    print("result: " + ("ok" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
