"""Cross-process event latency on one PostgreSQL database: ours against a2a-sdk 1.3.0's cluster mode.

Run ``.venv/bin/python benchmarks/scale_latency.py`` (about three minutes) or add ``--quick`` (a few
seconds; a smoke run, not judged). PostgreSQL is ``$A2A_WIRE_BENCH_DSN``, else
``$A2A_WIRE_TEST_POSTGRES_DSN``, else ``postgresql://postgres@127.0.0.1:5432/test``; each system
works in a schema of its own, dropped afterwards (benchmarks/_pg.py).

For each system two server processes share one schema: A, pinned to CPU 0, runs the agent; B,
pinned to CPU 1 with this process, serves the subscriber. A task's run (benchmarks/_ticks.py)
starts the task on A (SendMessage with ``returnImmediately``), then waits at a gate; the
subscriber opens SubscribeToTask (SSE) on B and, once it holds the task's first event, opens
the gate; A then adds ``--events`` artifact chunks ``--interval-ms`` apart, each carrying its
number and its emission time (``CLOCK_MONOTONIC``, one clock for all processes of the machine,
read just before the agent hands the chunk to its server), and completes the task. The latency
of a chunk runs from that emission to the moment B's bytes holding it reach the subscriber: the
write and commit on A, the wake-up of B and its read, and the SSE hop. ``--tasks`` tasks run,
``--parallel`` at a time, after one warm-up task that is not counted. The systems:

* ``ours``: ``a2a-wire serve`` on ``storage = "postgresql"`` (defaults: ``poll_interval_seconds``
  1 s), executor benchmarks/_agents.py ``TickAgent``. B's stream is woken by the ``NOTIFY`` of
  A's commit and reads the events table;
* ``ours-poll``: the same, but B drops every notification of the events channel
  (benchmarks/_no_notify.py), so its stream only finds new events by the fallback poll: what a
  lost notification costs;
* ``sdk``: a2a-sdk 1.3.0's cluster mode (benchmarks/_sdk_servers.py): ``DefaultRequestHandler``
  with ``VersionedDatabaseTaskStore`` and ``DatabaseTaskEventStream`` on the same database, the
  same agent; B, which does not run the task, polls the events table every 0.5 s (the SDK's
  default).

With ``--rounds 2`` (the default) each system is measured twice, in opposite orders, and the two
are pooled. The report gives, per system, the number of chunks, p50, p90, p99 and the largest
latency, the share of both CPUs other processes of the machine used meanwhile, then the ratios
SDK/ours and the issue's target (ours p50 at most 5 ms). Every stream is checked: each chunk
exactly once, in order, then COMPLETED; any lost, duplicated or reordered chunk, or a failed
request, makes the run exit with status 1.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import importlib.metadata
import itertools
import os
import platform
import subprocess
import sys
import tempfile
import time
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path

import _pg
import aiohttp
import orjson
from _ticks import parse_tick, tick_message

from a2a_wire._protocol.sse import SSEDecoder

SYSTEMS = ("ours", "ours-poll", "sdk")
A_CORE, B_CORE = 0, 1
TARGET_MS = 5.0
HEADERS = {"A2A-Version": "1.0", "Content-Type": "application/json", "Accept": "text/event-stream"}
TERMINAL = {"TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED"}
_IDS = itertools.count(1)


@dataclass
class Result:
    """What the subscribers of one system saw."""

    latencies: list[float] = field(default_factory=list)
    tasks: int = 0
    lost: int = 0
    duplicated: int = 0
    errors: list[str] = field(default_factory=list)
    elapsed: float = 0.0
    others: float = 0.0  # CPU seconds of other processes of the machine meanwhile

    def merge(self, other: Result) -> None:
        self.latencies += other.latencies
        self.tasks += other.tasks
        self.lost += other.lost
        self.duplicated += other.duplicated
        self.errors += other.errors
        self.elapsed += other.elapsed
        self.others += other.others

    @property
    def broken(self) -> int:
        return self.lost + self.duplicated + len(self.errors)


def _call(method: str, params: dict[str, object]) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": next(_IDS), "method": method, "params": params})


async def start_task(session: aiohttp.ClientSession, url: str, text: str) -> str:
    """SendMessage with ``returnImmediately`` to process A; the new task's id."""
    message = {"messageId": f"m-{next(_IDS)}", "role": "ROLE_USER", "parts": [{"text": text}]}
    params = {"message": message, "configuration": {"returnImmediately": True}}
    async with session.post(url, data=_call("SendMessage", params), headers=HEADERS) as response:
        answer = orjson.loads(await response.read())
    task = answer.get("result", {}).get("task")
    if not isinstance(task, dict) or not task.get("id"):
        raise RuntimeError(f"SendMessage did not answer a task: {answer!r:.300}")
    return str(task["id"])


def _chunks(result: dict[str, object]) -> list[str]:
    update = result.get("artifactUpdate")
    parts = update.get("artifact", {}).get("parts", []) if isinstance(update, dict) else []
    return [str(part.get("text", "")) for part in parts]


async def _open_stream(
    session: aiohttp.ClientSession, url: str, task_id: str
) -> aiohttp.ClientResponse:
    """SubscribeToTask on B, retried while B does not see the task yet (at most 5 s)."""
    deadline = time.monotonic() + 5.0
    while True:
        call = _call("SubscribeToTask", {"id": task_id})
        response = await session.post(url, data=call, headers=HEADERS)
        if response.content_type == "text/event-stream":
            return response
        body = await response.read()
        response.release()
        if time.monotonic() > deadline:
            raise RuntimeError(f"SubscribeToTask refused: {body[:300]!r}")
        await asyncio.sleep(0.05)


async def follow(
    session: aiohttp.ClientSession, url: str, task_id: str, gate: Path, count: int, out: Result
) -> None:
    """Follow the task on B, open its gate at the first event, check and time every chunk."""
    seen: list[int] = []
    final = ""
    response = await _open_stream(session, url, task_id)
    try:
        decoder = SSEDecoder()
        async for data in response.content.iter_any():
            now = time.monotonic()
            for event in decoder.feed(data):
                answer = orjson.loads(event.data)
                result = answer.get("result")
                if not isinstance(result, dict):
                    raise RuntimeError(f"stream error: {event.data[:300]}")
                if "task" in result and not gate.exists():
                    gate.touch()
                for text in _chunks(result):
                    number, emitted = parse_tick(text)
                    seen.append(number)
                    out.latencies.append(now - emitted)
                status = result.get("statusUpdate") or result.get("task") or {}
                state = status.get("status", {}).get("state", "")
                final = state if state in TERMINAL else final
    finally:
        response.release()
    distinct = set(seen)
    out.lost += len(set(range(count)) - distinct)
    out.duplicated += len(seen) - len(distinct)
    if seen != sorted(distinct) or final != "TASK_STATE_COMPLETED":
        out.errors.append(f"task {task_id}: chunks out of order or final state {final!r}")
    out.tasks += 1


async def run_tasks(
    a_url: str, b_url: str, gates: Path, tasks: int, args: argparse.Namespace
) -> Result:
    out = Result()
    text = tick_message(args.events, args.interval_ms)
    limit = asyncio.Semaphore(args.parallel)
    connector = aiohttp.TCPConnector(limit=2 * args.parallel + 2)
    timeout = aiohttp.ClientTimeout(total=120)

    async def one(session: aiohttp.ClientSession) -> None:
        async with limit:
            try:
                task_id = await start_task(session, a_url, text)
                await follow(session, b_url, task_id, gates / task_id, args.events, out)
            except (RuntimeError, aiohttp.ClientError, ValueError, TimeoutError) as exc:
                out.errors.append(f"{type(exc).__name__}: {exc}")

    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        await asyncio.gather(*(one(session) for _ in range(tasks)))
    return out


def measure(system: str, address: str, folder: Path, args: argparse.Namespace) -> Result:
    """Start A and B of ``system`` on a new schema, warm up, run the tasks; all stopped after."""
    gates = folder / "gates"
    gates.mkdir(parents=True)
    with _pg.schema(address, create=system == "sdk") as name:
        servers = _servers(system, address, name, folder, gates)
        with servers[0] as (a, a_url), servers[1] as (b, b_url):
            warm = asyncio.run(run_tasks(a_url, b_url, gates, 1, args))
            busy0, ours0 = _pg.machine_busy(), _own_cpu(a.pid, b.pid, address, name)
            start = time.perf_counter()
            out = asyncio.run(run_tasks(a_url, b_url, gates, args.tasks, args))
            out.elapsed = time.perf_counter() - start
            busy1, ours1 = _pg.machine_busy(), _own_cpu(a.pid, b.pid, address, name)
            out.others = max(0.0, (busy1 - busy0) - (ours1 - ours0))
    out.errors += [f"warm-up: {e}" for e in warm.errors]
    out.lost, out.duplicated = out.lost + warm.lost, out.duplicated + warm.duplicated
    return out


def _own_cpu(a: int, b: int, address: str, name: str) -> float:
    """CPU seconds of A, B, this process and their PostgreSQL backends."""
    servers = sum(_pg.tree_stats(pid)[0] or 0.0 for pid in (a, b))
    backends = sum(asyncio.run(_pg.backend_cpu(address, name)).values())
    return servers + backends + time.process_time()


def _servers(
    system: str, address: str, name: str, folder: Path, gates: Path
) -> list[AbstractContextManager[tuple[subprocess.Popen[bytes], str]]]:
    """Processes A and B of ``system``, not started yet."""
    if system == "sdk":
        return [
            _pg.serve_sdk(address, name, agent="ticks", core=A_CORE, gate_dir=str(gates)),
            _pg.serve_sdk(address, name, agent="ticks", core=B_CORE, gate_dir=str(gates)),
        ]
    skill = "_agents:TickAgent"
    options = f'[skills.options]\ngate_dir = "{gates}"\n'
    launcher = [str(_pg.HERE / "_no_notify.py")] if system == "ours-poll" else []
    return [
        _pg.serve_ours(folder / "a", address, name, skill=skill, cores=[A_CORE], skill_extra=options),
        _pg.serve_ours(
            folder / "b", address, name, skill=skill, cores=[B_CORE], skill_extra=options,
            launcher=launcher,
        ),
    ]  # fmt: skip


# --- report --------------------------------------------------------------------------------------


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def print_header(args: argparse.Namespace, address: str) -> None:
    now = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    deps = ["aiohttp", "asyncpg", "a2a-sdk", "sqlalchemy", "starlette", "uvicorn"]
    print(f"date:     {now}")
    print(f"machine:  {platform.platform()}, {os.cpu_count()} CPUs")
    print(f"python:   {platform.python_implementation()} {platform.python_version()}")
    print("packages: " + ", ".join(f"{d} {_version(d)}" for d in deps))
    print(f"database: {_pg.server_facts(address)}, on this machine (not pinned)")
    print(f"pinning:  process A on CPU {A_CORE}; process B and the subscriber on CPU {B_CORE}")
    print(
        f"workload: {args.tasks} tasks ({args.parallel} at a time) of {args.events} chunks "
        f"{args.interval_ms:g} ms apart, {args.rounds} round(s), after 1 warm-up task"
    )


def print_report(results: dict[str, Result]) -> None:
    print()
    print("| system | chunks | p50 ms | p90 ms | p99 ms | max ms | other load % | lost | dup |")
    print("|---|---|---|---|---|---|---|---|---|")
    for system, r in results.items():
        ms = [x * 1e3 for x in r.latencies]
        other = r.others / (2 * r.elapsed) * 100 if r.elapsed else 0.0
        print(
            f"| {system} | {len(ms)} | {_pct(ms, 0.5):.2f} | {_pct(ms, 0.9):.2f} "
            f"| {_pct(ms, 0.99):.2f} | {max(ms, default=float('nan')):.2f} | {other:.0f} "
            f"| {r.lost} | {r.duplicated} |"
        )
    ours, sdk = results.get("ours"), results.get("sdk")
    print()
    if ours is not None and sdk is not None and ours.latencies and sdk.latencies:
        for q, label in ((0.5, "p50"), (0.99, "p99")):
            ratio = _pct(sdk.latencies, q) / _pct(ours.latencies, q)
            print(f"latency SDK/ours, {label}: {ratio:.1f}x")
    if ours is not None and ours.latencies:
        p50 = _pct(ours.latencies, 0.5) * 1e3
        verdict = "met" if p50 <= TARGET_MS else "MISSED"
        print(f"target: ours p50 {p50:.2f} ms (goal <= {TARGET_MS:g} ms): {verdict}")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 tasks of 10 chunks, 1 round")
    parser.add_argument("--systems", default=",".join(SYSTEMS), help="comma-separated subset")
    parser.add_argument("--tasks", type=int, default=None, help="measured tasks per round (8)")
    parser.add_argument("--parallel", type=int, default=4, help="tasks running at once")
    parser.add_argument("--events", type=int, default=None, help="chunks per task (100)")
    parser.add_argument("--interval-ms", type=float, default=20.0, help="between two chunks")
    parser.add_argument("--rounds", type=int, default=None, help="rounds (orders alternate; 2)")
    args = parser.parse_args()
    args.systems = [s for s in args.systems.split(",") if s]
    if unknown := set(args.systems) - set(SYSTEMS):
        parser.error(f"unknown systems: {sorted(unknown)}; choose from {SYSTEMS}")
    args.tasks = args.tasks or (2 if args.quick else 8)
    args.events = args.events or (10 if args.quick else 100)
    args.rounds = args.rounds or (1 if args.quick else 2)
    return args


def main() -> int:
    args = parse_args()
    address = _pg.dsn()
    if hasattr(os, "sched_setaffinity") and B_CORE in os.sched_getaffinity(0):
        os.sched_setaffinity(0, {B_CORE})
    print_header(args, address)
    results: dict[str, Result] = {}
    with tempfile.TemporaryDirectory(prefix="a2a-bench-scale-") as tmp:
        for r in range(args.rounds):
            for system in args.systems if r % 2 == 0 else args.systems[::-1]:
                print(f"round {r + 1}/{args.rounds}: {system} ...", file=sys.stderr, flush=True)
                run = measure(system, address, Path(tmp, f"{system}-{r}"), args)
                results.setdefault(system, Result()).merge(run)
    print_report({s: results[s] for s in args.systems})
    broken = sum(r.broken for r in results.values())
    print()
    print(f"broken streams or requests: {broken}")
    for system, r in results.items():
        for error in r.errors[:5]:
            print(f"  {system}: {error}")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
