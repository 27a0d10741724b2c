"""Chunk benchmark: one streamed artifact of N chunks, server CPU and bytes written per chunk.

Run ``.venv/bin/python benchmarks/stream_chunks.py`` (about two minutes) or ``--quick`` (N = 10 and
100, a few seconds; a smoke run, not judged).

One SendStreamingMessage whose agent streams one artifact of N chunks of 32 bytes (the first
creates it, the others have ``append`` set), then completes the task, for N = 100, 1,000 and
10,000. The servers are those of benchmarks/_servers.py with ``--agent chunks``, each in its
own process pinned to CPU 0 while this process (the client: a2a_wire's, reading every event) is
pinned to CPU 1, one after the other in the same run:

* ``ours-sqlite``: a2a_wire on its default durable store (SQLite);
* ``ours-memory``: a2a_wire on the in-memory store;
* ``sdk-sqlite``: a2a-sdk 1.3.0 with its own SQLite task store (``DatabaseTaskStore`` on
  SQLAlchemy + aiosqlite, the ``a2a-sdk[sqlite]`` extra), same agent, same workload.

Each cell repeats the request until it has streamed ``--min-chunks`` chunks (at least once) and
reports, per chunk: the server's CPU time (user + system, every thread, from /proc/PID/stat) and
the bytes it wrote towards its store's files (``write_bytes`` of /proc/PID/io: counted when a
page of a file is first dirtied, so the page cache can merge rewrites of one page; the server
writes no other files). Per-request work (HTTP, task creation, completion) is included, which
weighs more at small N. Every request is checked: N artifact events on the stream, a COMPLETED
task, and GetTask returning the N chunks in order (not measured).

Then the ratio N=10,000 / N=100 per store and metric (the issue's target for our two stores:
1.5x or less, because a chunk should cost the same however long the artifact already is) and
the ratios ours/SDK. A cell whose estimated run time, extrapolated as if its cost grew with the
square of N from the previous size, exceeds ``--budget`` seconds is skipped with a note. Exit
status 1 only when a request fails or answers wrongly; a missed target is printed, not an error.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import math
import os
import platform
import sys
import tempfile
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path

import aiohttp
import orjson
from _servers import CHUNK, chunk_text
from server import LOAD_CORE, SERVER_CORE, Server, running

from a2a_wire._protocol.sse import SSEDecoder
from a2a_wire.client import A2AClient, ClientSettings
from a2a_wire.types import GetTaskRequest, TaskState

SIZES = (100, 1_000, 10_000)
QUICK_SIZES = (10, 100)
STORES = ("ours-sqlite", "ours-memory", "sdk-sqlite")
OURS = ("ours-sqlite", "ours-memory")
TARGET = 1.5
SETTINGS = ClientSettings(allow=["127.0.0.1"], total_timeout=None, read_timeout=None)
HEADERS = {"A2A-Version": "1.0", "Content-Type": "application/json", "Accept": "text/event-stream"}


@dataclass(frozen=True)
class Limits:
    """When a cell has measured enough: any one of these reached (after one request at least)."""

    chunks: int  # chunks streamed
    cpu: float  # server CPU seconds (/proc counts in 10 ms ticks: 1 s gives 1 %)
    seconds: float  # wall-clock time

    def reached(self, chunks: int, cpu: float, started: float) -> bool:
        return (
            chunks >= self.chunks
            or cpu >= self.cpu
            or time.perf_counter() - started >= self.seconds
        )


@dataclass
class Cell:
    """One store at one N."""

    store: str
    n: int
    requests: int = 0
    seconds: float = 0.0
    cpu_us: float = 0.0  # server CPU per chunk, microseconds
    write_bytes: float = 0.0  # bytes written towards the store's files per chunk
    skipped: str = ""
    errors: int = 0


def _write_bytes(pid: int) -> int | None:
    try:
        lines = Path(f"/proc/{pid}/io").read_text().splitlines()
    except OSError:
        return None
    fields = dict(line.split(": ") for line in lines)
    return int(fields["write_bytes"])


def _request(n: int) -> bytes:
    message = {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": str(n)}]}
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendStreamingMessage",
        "params": {"message": message},
    }
    return orjson.dumps(call)


async def stream_once(session: aiohttp.ClientSession, url: str, n: int) -> str:
    """One SendStreamingMessage of N chunks; returns the task id after checking the stream.

    The events are read with the sans-IO SSE decoder and orjson only, a few microseconds each,
    so that the client keeps up with the fastest server (a2a_wire closes a stream whose reader
    falls ``stream_queue_size`` events behind).
    """
    decoder, chunks, task_id, state = SSEDecoder(), 0, "", ""
    async with session.post(url, data=_request(n), headers=HEADERS) as response:
        async for data in response.content.iter_any():
            for event in decoder.feed(data):
                answer = orjson.loads(event.data)
                if "result" not in answer:
                    raise AssertionError(f"error event: {answer.get('error')}")
                result = answer["result"]
                if "artifactUpdate" in result:
                    chunks += len(result["artifactUpdate"]["artifact"]["parts"])
                elif "statusUpdate" in result:
                    state = result["statusUpdate"]["status"]["state"]
                elif "task" in result:
                    task_id, state = result["task"]["id"], result["task"]["status"]["state"]
    if chunks != n or state != "TASK_STATE_COMPLETED":
        raise AssertionError(f"stream carried {chunks} of {n} chunks, ended {state or 'early'}")
    return task_id


async def check_task(client: A2AClient, task_id: str, n: int) -> None:
    """GetTask returns the COMPLETED task holding the N chunks, in order."""
    task = await client.get_task(GetTaskRequest(id=task_id, history_length=0))
    parts = [p.text for a in task.artifacts for p in a.parts]
    state = task.status.state if task.status is not None else None
    if state is not TaskState.COMPLETED or parts != [chunk_text(i) for i in range(n)]:
        raise AssertionError(f"task {task_id}: {state}, {len(parts)} parts (expected {n})")


def _cpu(server: Server) -> float:
    cpu = server.stats()[0]
    if cpu is None:
        raise RuntimeError("no /proc/PID/stat: this benchmark needs Linux")
    return cpu


async def measure(server: Server, store: str, n: int, limits: Limits) -> Cell:
    """Streams of N chunks one after the other, until one of ``limits`` is reached."""
    pid = server.process.pid
    cell = Cell(store, n)
    task_ids: list[str] = []
    timeout = aiohttp.ClientTimeout(total=None)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        cpu0, bytes0, t0 = _cpu(server), _write_bytes(pid) or 0, time.perf_counter()
        while not task_ids or not limits.reached(n * len(task_ids), _cpu(server) - cpu0, t0):
            task_ids.append(await stream_once(session, server.url, n))
        cpu1, bytes1, t1 = _cpu(server), _write_bytes(pid) or 0, time.perf_counter()
    async with A2AClient(server.url, settings=SETTINGS) as client:
        for task_id in task_ids[-2:]:
            await check_task(client, task_id, n)
    chunks = n * len(task_ids)
    cell.requests, cell.seconds = len(task_ids), t1 - t0
    cell.cpu_us = (cpu1 - cpu0) / chunks * 1e6
    cell.write_bytes = (bytes1 - bytes0) / chunks
    return cell


def _growth(measured: list[Cell]) -> float:
    """How a request's time grows with N (the exponent), from the last two sizes measured.

    With one size only it is taken as 1.5 (between a constant cost per chunk and a store that
    rewrites the task per chunk); the measured exponent is kept between 1 and 2.
    """
    if len(measured) < 2:
        return 1.5
    a, b = measured[-2], measured[-1]
    ratio = (b.seconds / b.requests) / (a.seconds / a.requests)
    return min(2.0, max(1.0, math.log(ratio) / math.log(b.n / a.n))) if ratio > 0 else 2.0


def _too_long(measured: list[Cell], n: int, budget: float) -> str:
    """Why the cell is skipped, if extrapolation says one request would exceed the budget."""
    if not measured:
        return ""
    last, power = measured[-1], _growth(measured)
    per_request = last.seconds / last.requests
    estimate = per_request * (n / last.n) ** power
    if estimate <= budget:
        return ""
    return (
        f"skipped: N={last.n:,} took {per_request:.1f} s per request; growing as N^{power:.2f}, "
        f"N={n:,} would take ~{estimate:.0f} s (over --budget {budget:g} s)"
    )


def run_store(store: str, args: argparse.Namespace, directory: Path) -> list[Cell]:
    """Start one server, warm it up, and measure every N (smallest first)."""
    cells: list[Cell] = []
    db = directory / f"{store}.sqlite3"
    limits = Limits(args.min_chunks, args.min_cpu, args.budget / 2)
    with running(store, args.pin, db=db, extra=["--agent", "chunks"]) as server:
        asyncio.run(measure(server, store, 10, Limits(20, 1.0, 5.0)))  # imports, caches
        measured: list[Cell] = []
        for n in args.sizes:
            reason = _too_long(measured, n, args.budget)
            if reason:
                cells.append(Cell(store, n, skipped=reason))
                print(f"  {store} N={n:,}: {reason}", file=sys.stderr, flush=True)
                continue
            try:
                cell = asyncio.run(measure(server, store, n, limits))
            except Exception as exc:  # a failed or wrong answer: reported, counted, run goes on
                cell = Cell(store, n, skipped=f"error: {exc!r}", errors=1)
            cells.append(cell)
            if not cell.errors:
                measured.append(cell)
            print(f"  {store} N={n:,}: {cell.seconds:.1f} s", file=sys.stderr, flush=True)
    return cells


def print_header(args: argparse.Namespace) -> None:
    now = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    print(f"date:     {now}")
    print(f"machine:  {platform.platform()}, {os.cpu_count()} CPUs")
    print(f"python:   {platform.python_implementation()} {platform.python_version()}")
    placement = f"server on CPU {SERVER_CORE}, client on CPU {LOAD_CORE}"
    print(f"pinning:  {placement if args.pin else 'not pinned (needs CPUs 0 and 1)'}")
    print(
        f"workload: one SendStreamingMessage, one artifact of N chunks of {len(CHUNK)} bytes "
        f"(append=true), then COMPLETED; each cell repeated until {args.min_chunks:,} chunks, "
        f"{args.min_cpu:g} s of server CPU or {args.budget / 2:g} s"
    )


def print_table(cells: list[Cell]) -> None:
    print()
    print("| store | N | requests | seconds | server CPU µs/chunk | write_bytes/chunk |")
    print("|---|---:|---:|---:|---:|---:|")
    for c in cells:
        if c.skipped:
            print(f"| {c.store} | {c.n:,} | - | - | - | - | {c.skipped}")
            continue
        print(
            f"| {c.store} | {c.n:,} | {c.requests} | {c.seconds:.2f} | {c.cpu_us:,.1f} "
            f"| {c.write_bytes:,.0f} |"
        )


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b else "-"


def print_growth(cells: dict[tuple[str, int], Cell], sizes: tuple[int, ...], judge: bool) -> None:
    """N=largest / N=smallest per store and metric, with the verdict for our stores."""
    low, high = sizes[0], sizes[-1]
    print()
    print(f"growth N={high:,} / N={low:,} per chunk (target for ours: {TARGET}x or less):")
    for store in STORES:
        a, b = cells.get((store, low)), cells.get((store, high))
        if a is None or b is None:
            continue
        if a.skipped or b.skipped:
            print(f"  {store}: not measured at both sizes")
            continue
        if not a.cpu_us or not b.cpu_us:  # a run too short for /proc's 10 ms ticks
            print(f"  {store}: CPU - (under the 10 ms resolution of /proc), not judged")
            continue
        cpu = b.cpu_us / a.cpu_us
        # A store that writes nothing (in memory) has nothing to grow: 0 over 0 counts as met.
        nothing = a.write_bytes < 1 and b.write_bytes < 1
        written = b.write_bytes / a.write_bytes if a.write_bytes >= 1 else float("inf")
        verdict = ""
        if judge and store in OURS:
            ok = cpu <= TARGET and (nothing or written <= TARGET)
            verdict = ": met" if ok else ": MISSED"
        shown = "nothing written" if nothing else f"{written:.2f}x"
        print(f"  {store}: CPU {cpu:.2f}x, write_bytes {shown}{verdict}")


def print_versus_sdk(cells: dict[tuple[str, int], Cell], sizes: tuple[int, ...]) -> None:
    print()
    print("ours / SDK (sdk-sqlite) per chunk, lower is better:")
    for n in sizes:
        sdk = cells.get(("sdk-sqlite", n))
        for store in OURS:
            ours = cells.get((store, n))
            if ours is None or sdk is None or ours.skipped or sdk.skipped:
                print(f"  N={n:,} {store}: - (a side was not measured)")
                continue
            print(
                f"  N={n:,} {store}: CPU {_ratio(ours.cpu_us, sdk.cpu_us)}, "
                f"write_bytes {_ratio(ours.write_bytes, sdk.write_bytes)}"
            )


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="N = 10 and 100, not judged")
    parser.add_argument("--stores", default=",".join(STORES), help="comma-separated subset")
    parser.add_argument("--sizes", default=None, help="comma-separated N (default 100,1000,10000)")
    parser.add_argument("--min-chunks", type=int, default=None, help="chunks that end a cell")
    parser.add_argument("--min-cpu", type=float, default=None, help="server CPU s that end a cell")
    parser.add_argument("--budget", type=float, default=None, help="seconds a request may take")
    parser.add_argument("--dir", type=Path, default=None, help="where the database files go")
    parser.add_argument("--json", default=None, help="also write the figures here")
    args = parser.parse_args()
    args.stores = [s for s in args.stores.split(",") if s]
    if set(args.stores) - set(STORES):
        parser.error(f"unknown stores: {sorted(set(args.stores) - set(STORES))}")
    default = QUICK_SIZES if args.quick else SIZES
    args.sizes = tuple(int(n) for n in args.sizes.split(",")) if args.sizes else default
    args.min_chunks = args.min_chunks or (500 if args.quick else 10_000)
    args.min_cpu = args.min_cpu or (0.2 if args.quick else 2.0)
    args.budget = args.budget or (30.0 if args.quick else 90.0)
    args.pin = hasattr(os, "sched_setaffinity") and {
        SERVER_CORE,
        LOAD_CORE,
    } <= os.sched_getaffinity(0)
    return args


def main() -> int:
    args = parse_args()
    if args.pin:
        os.sched_setaffinity(0, {LOAD_CORE})
    print_header(args)
    cells: list[Cell] = []
    with tempfile.TemporaryDirectory(prefix="a2a-chunks-", dir=args.dir) as tmp:
        for store in args.stores:
            print(f"{store} ...", file=sys.stderr, flush=True)
            cells += run_store(store, args, Path(tmp))
    by_key = {(c.store, c.n): c for c in cells}
    print_table(cells)
    print_growth(by_key, args.sizes, judge=not args.quick)
    print_versus_sdk(by_key, args.sizes)
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(c) for c in cells], indent=1) + "\n")
    errors = sum(c.errors for c in cells)
    print()
    print(f"errors: {errors}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
