"""Cost with scale: a million tasks, an outbox backlog behind a dead webhook, and retention.

Run ``.venv/bin/python benchmarks/scale_tasks.py`` (1,000,000 tasks, both stores: long; about
half an hour, most of it loading and retention) or with a smaller ``--tasks`` (e.g. 200000);
``--quick`` is a smoke run of a few thousand tasks, not judged. ``--stores sqlite`` or
``--stores postgresql`` measures one store. PostgreSQL is ``$A2A_WIRE_BENCH_DSN``, else
``$A2A_WIRE_TEST_POSTGRES_DSN``, else ``postgresql://postgres@127.0.0.1:5432/test``; every
instance works in a ``bench_`` schema of its own, dropped afterwards (benchmarks/_pg.py); the
SQLite files live in a temporary directory, removed afterwards.

Each store is loaded twice, with ``--small`` (10,000) and with ``--tasks`` tasks, by a bulk
loader (:mod:`_bulk`) that clones a finished task the store itself wrote (its rows, four
events and snapshot, with new ids, contexts of ten tasks and times). The measured operations go
through the real store API or the real server, in interleaved rounds (small, large, large,
small, ...), and each figure is a ratio of the large instance to the small one measured in the
same run:

* GetTask p99 (``store.get`` of a random task) and ListTasks p99 (``store.list`` of a random
  context, ten tasks), in this process, pinned to CPU 1: the p99 of each round, and of those
  the median, so that one disturbed round does not decide.
* Server CPU per SendMessage: the real server (``ours-sqlite`` of benchmarks/_servers.py, or
  ``a2a-wire serve`` on PostgreSQL) on each loaded instance, pinned to CPU 0, blocking
  SendMessage at concurrency 16 from CPU 1, every answer checked; PostgreSQL's figure adds the
  CPU of the backends serving the server.
* Outbox: a delivery to a live webhook (its row written by a real ``create``) as the server's
  delivery worker reads it (PostgreSQL: ``claim_deliveries`` then ``delivery_done``; SQLite:
  ``pending_lanes``, ``next_delivery``, ``delivery_done``), with ``--backlog`` undelivered rows
  of one dead webhook (each lane's head retried and not due for an hour) against an empty
  outbox, once per number of lanes in ``--dead-lanes`` (one task with many events, many tasks
  with a hundred each); PostgreSQL also gives database CPU per delivery.
* Retention: the server's sweeper (``a2a_wire.server._retention.Retention``, its clock a
  fortnight ahead) deletes every task of the large instance (at most ``--retention-limit``) and
  purges their rows, while a reader asks for one kept task every 20 ms; printed are the longest
  single store call (one hop of SQLite's connection thread, one PostgreSQL statement or
  transaction) and the reader's worst wait.

Every target is printed with its ratio and met or missed. The machine is shared: rerun on a
quiet one for figures to quote. Exit status 1 on a wrong answer, not on a missed target.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import os
import platform
import random
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import _bulk
import _pg
from server import LOAD_CORE, SERVER_CORE, pin_load_generator, running
from server_load import SEND, new_session, run_load

from a2a_wire.server import ServerSettings
from a2a_wire.server._retention import Retention
from a2a_wire.server.store import EventLogStore, SQLiteTaskStore, TaskQuery
from a2a_wire.server.store.postgresql import PostgresTaskStore

TARGET = 1.5
HOLD_TARGET = 1.0
CONCURRENCY = 16
DAY = 86_400.0


@dataclass
class Figures:
    """What one store's run measured, by name; each a list over rounds."""

    lines: list[tuple[str, float, float, float, str]] = field(default_factory=list)
    errors: int = 0

    def ratio(self, name: str, small: float, large: float, unit: str) -> None:
        ratio = large / small if small else float("nan")
        self.lines.append((name, small, large, ratio, unit))
        print(f"  {name}: {small:,.3f} against {large:,.3f} {unit}, {ratio:.2f}x", flush=True)


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] if ordered else 0.0


def rounds_order(rounds: int) -> Iterator[tuple[int, str]]:
    """(round, size) in interleaved order: small, large, then large, small, ..."""
    for r in range(rounds):
        for size in ("small", "large") if r % 2 == 0 else ("large", "small"):
            yield r, size


# --- store instances -----------------------------------------------------------------------------


@dataclass
class Instance:
    """One loaded store: its files or schema, and how to open a store on it."""

    kind: str
    tasks: int
    path: Path | None = None
    schema: str = ""

    def store(self, **options: Any) -> EventLogStore:
        if self.kind == "sqlite":
            assert self.path is not None
            return SQLiteTaskStore(self.path, **options)
        return PostgresTaskStore(_pg.tagged(_pg.dsn(), self.schema), schema=self.schema, **options)


@contextlib.contextmanager
def instance(kind: str, folder: Path, tag: str, tasks: int) -> Iterator[Instance]:
    """A new, empty instance (a file or a schema), removed or dropped on exit."""
    if kind == "sqlite":
        yield Instance(kind, tasks, path=folder / f"{tag}.db")
        return
    with _pg.schema(_pg.dsn()) as name:
        yield Instance(kind, tasks, schema=name)


async def load(inst: Instance) -> float:
    """Fill ``inst`` with its tasks by the bulk loader; seconds it took."""
    started = time.perf_counter()
    store = inst.store()
    await store.open()
    try:
        await _bulk.write_template(store)
    finally:
        await store.close()
    if inst.kind == "sqlite":
        assert inst.path is not None
        await asyncio.to_thread(_bulk.load_sqlite, inst.path, inst.tasks)
    else:
        await _bulk.load_postgresql(_pg.dsn(), inst.schema, inst.tasks)
    return time.perf_counter() - started


async def load_backlog(inst: Instance, rows: int, lanes: int) -> None:
    """The template only, then the dead webhook's backlog (``rows`` in ``lanes``), in bulk."""
    await load(inst)
    if inst.kind == "sqlite":
        assert inst.path is not None
        await asyncio.to_thread(_bulk.backlog_sqlite, inst.path, rows, lanes)
    else:
        await _bulk.backlog_postgresql(_pg.dsn(), inst.schema, rows, lanes)


# --- reads ---------------------------------------------------------------------------------------


async def timed(call: Awaitable[Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = await call
    return time.perf_counter() - started, result


async def reads(insts: dict[str, Instance], args: argparse.Namespace, out: Figures) -> None:
    """GetTask and ListTasks p99, small against large, interleaved rounds."""
    stores = {size: inst.store() for size, inst in insts.items()}
    for store in stores.values():
        await store.open()
    gets: dict[str, list[float]] = {"small": [], "large": []}
    lists: dict[str, list[float]] = {"small": [], "large": []}
    try:
        for size, store in stores.items():  # warm both the same way: one pass of each read
            await _read_round(store, insts[size].tasks, min(args.samples, 200), [], [], out)
        for _, size in rounds_order(args.rounds):
            store, n, get, listed = stores[size], insts[size].tasks, [], []
            await _read_round(store, n, args.samples, get, listed, out)
            gets[size].append(p99(get))
            lists[size].append(p99(listed))
    finally:
        for store in stores.values():
            await store.close()
    # Each round's p99, then the median of the rounds: one disturbed round does not decide.
    out.ratio("GetTask p99", _median(gets["small"]), _median(gets["large"]), "ms")
    out.ratio(
        "ListTasks of one context p99", _median(lists["small"]), _median(lists["large"]), "ms"
    )


async def _read_round(
    store: EventLogStore, n: int, samples: int, gets: list[float], lists: list[float], out: Figures
) -> None:
    rng = random.Random()
    for _ in range(samples):
        i = rng.randrange(n)
        took, task = await timed(store.get(_bulk.task_id(i), owner=_bulk.OWNER))
        gets.append(took * 1e3)
        if task is None or task.id != _bulk.task_id(i):
            out.errors += 1
        context = _bulk.context_id(rng.randrange(n) // _bulk.PER_CONTEXT)
        query = TaskQuery(context_id=context, page_size=50)
        took, page = await timed(store.list(query, owner=_bulk.OWNER))
        lists.append(took * 1e3)
        if not page.tasks or any(t.context_id != context for t in page.tasks):
            out.errors += 1


# --- SendMessage on the real server --------------------------------------------------------------


@contextlib.contextmanager
def serving(inst: Instance, pin: bool, folder: Path) -> Iterator[Any]:
    """The real server on ``inst``; yields (url, cpu reader) where the reader sums server+db."""
    if inst.kind == "sqlite":
        with running("ours-sqlite", pin, db=inst.path) as server:

            async def cpu() -> float:
                return server.stats()[0] or 0.0

            yield server.url, cpu
        return
    cores = [SERVER_CORE] if pin else None
    address = _pg.dsn()
    with _pg.serve_ours(folder, address, inst.schema, cores=cores) as (process, url):

        async def cpu() -> float:
            own = _pg.tree_stats(process.pid)[0] or 0.0
            return own + sum((await _pg.backend_cpu(address, inst.schema)).values())

        yield url, cpu


async def _send_rounds(
    urls: dict[str, tuple[str, Callable[[], Awaitable[float]]]],
    args: argparse.Namespace,
    out: Figures,
) -> dict[str, tuple[float, int]]:
    used = {"small": (0.0, 0), "large": (0.0, 0)}
    async with new_session(CONCURRENCY) as session:
        for url, _ in urls.values():  # warm-up, not counted
            warm = await run_load(session, url, SEND, CONCURRENCY, 600.0, count=args.sends // 4)
            out.errors += warm.errors
        for _, size in rounds_order(args.rounds):
            url, cpu = urls[size]
            before = await cpu()
            load = await run_load(session, url, SEND, CONCURRENCY, 600.0, count=args.sends)
            spent = await cpu() - before
            out.errors += load.errors
            for sample in load.samples:
                print(f"  error: {sample}")
            total, count = used[size]
            used[size] = (total + spent, count + load.requests)
    return used


def sends(
    insts: dict[str, Instance], args: argparse.Namespace, pin: bool, folder: Path, out: Figures
) -> None:
    """Server CPU per SendMessage on both instances, interleaved rounds."""
    with serving(insts["small"], pin, folder / "serve-small") as small:
        with serving(insts["large"], pin, folder / "serve-large") as large:
            used = asyncio.run(_send_rounds({"small": small, "large": large}, args, out))
    (cpu_s, n_s), (cpu_l, n_l) = used["small"], used["large"]
    what = "server CPU per SendMessage" + (
        " (+ database)" if insts["small"].kind != "sqlite" else ""
    )
    out.ratio(what, cpu_s / max(n_s, 1) * 1e6, cpu_l / max(n_l, 1) * 1e6, "µs")


# --- the outbox ----------------------------------------------------------------------------------


async def outbox(insts: dict[str, Instance], args: argparse.Namespace, out: Figures) -> None:
    """A live delivery with an empty outbox (``"empty"``) and behind each backlog shape."""
    stores: dict[str, Any] = {name: inst.store() for name, inst in insts.items()}
    for store in stores.values():
        await store.open()
    pg = insts["empty"].kind != "sqlite"
    times: dict[str, list[float]] = {name: [] for name in insts}
    cpu = dict.fromkeys(insts, 0.0)
    names = list(insts)
    try:
        seen = {name: (await store.pending_lanes(0))[1] for name, store in stores.items()}
        order = [(-1, name) for name in names]  # a warm-up pass, then rounds in turn
        order += [(r, name) for r in range(args.rounds) for name in names[:: 1 - 2 * (r % 2)]]
        for r, name in order:
            inst, store = insts[name], stores[name]
            before = sum((await _pg.backend_cpu(_pg.dsn(), inst.schema)).values()) if pg else 0.0
            for k in range(args.deliveries):
                took, seen[name] = await _deliver(store, pg, seen[name], f"{name}-{r}-{k}", out)
                if r >= 0:
                    times[name].append(took * 1e3)
            if pg and r >= 0:
                after = sum((await _pg.backend_cpu(_pg.dsn(), inst.schema)).values())
                cpu[name] += after - before
    finally:
        for store in stores.values():
            await store.close()
    n = max(len(times["empty"]), 1)
    for lanes in args.dead_lanes:
        name = f"{lanes}"
        what = f"live delivery behind {args.backlog:,} dead rows in {lanes:,} lane(s), p50"
        out.ratio(what, _median(times["empty"]), _median(times[name]), "ms")
        if pg:
            spent = cpu["empty"] / n * 1e6, cpu[name] / n * 1e6
            out.ratio("  database CPU per live delivery", *spent, "µs")


def _median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2] if values else 0.0


async def _deliver(store: Any, pg: bool, seen: int, tag: str, out: Figures) -> tuple[float, int]:
    """Write one live row (untimed), then read and retire it as the delivery worker does."""
    task_id = await _bulk.write_live_task(store, tag)
    started = time.perf_counter()
    if pg:
        rows = await store.claim_deliveries(CONCURRENCY)
    else:
        lanes, seen = await store.pending_lanes(seen)
        rows = [row for lane in lanes if (row := await store.next_delivery(*lane)) is not None]
    live = [row for row in rows if row.config.task_id == task_id]
    for row in live:
        await store.delivery_done(row.seq)
    took = time.perf_counter() - started
    if len(live) != 1 or len(rows) != 1:
        out.errors += 1
    return took, seen


# --- retention -----------------------------------------------------------------------------------


@dataclass
class Holds:
    """The longest single store call of each kind while retention ran."""

    longest: dict[str, float] = field(default_factory=dict)
    calls: dict[str, int] = field(default_factory=dict)

    def wrap(self, store: Any, name: str) -> None:
        call = getattr(store, name)

        async def timed_call(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return await call(*args, **kwargs)
            finally:
                took = time.perf_counter() - started
                self.longest[name] = max(self.longest.get(name, 0.0), took)
                self.calls[name] = self.calls.get(name, 0) + 1

        setattr(store, name, timed_call)


async def retention(inst: Instance, args: argparse.Namespace, out: Figures) -> None:
    """Delete the large instance's tasks by the server's sweeper; the longest hold."""
    store: Any = inst.store()
    await store.open()
    holds, waits = Holds(), []
    try:
        kept = await _bulk.write_live_task(store, "kept")
        limit = args.retention_limit or inst.tasks
        deleted = [0]
        expired = store.expired

        async def capped(*a: Any, **k: Any) -> list[str]:
            return [] if deleted[0] >= limit else await expired(*a, **k)

        store.expired = capped
        delete = store.delete_task

        async def counted(task_id: str) -> bool:
            done = bool(await delete(task_id))
            deleted[0] += done
            return done

        store.delete_task = counted
        for name in ("expired", "delete_task", "compact", "purge"):
            holds.wrap(store, name)
        sweeper = Retention(
            store, ServerSettings(), busy=lambda t: t == kept, clock=lambda: time.time() + 14 * DAY
        )
        stop = asyncio.Event()
        reader = asyncio.create_task(_probe(store, kept, stop, waits, out))
        started = time.perf_counter()
        swept = await sweeper.sweep()
        elapsed = time.perf_counter() - started
        stop.set()
        await reader
    finally:
        await store.close()
    worst = max(holds.longest.items(), key=lambda kv: kv[1]) if holds.longest else ("-", 0.0)
    print(
        f"retention: {swept.deleted:,} tasks deleted, {swept.purged:,} rows purged in {elapsed:.1f} s"
        f" ({', '.join(f'{k} x{v:,}' for k, v in holds.calls.items())})"
    )
    print("  longest call: " + ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in holds.longest.items()))
    out.lines.append(("longest store hold during retention", worst[1] * 1e3, 0.0, 0.0, worst[0]))
    out.lines.append(
        ("reader's worst wait during retention", max(waits, default=0.0), 0.0, 0.0, "")
    )
    if swept.deleted != min(limit, inst.tasks):
        out.errors += 1


async def _probe(
    store: EventLogStore, task_id: str, stop: asyncio.Event, waits: list[float], out: Figures
) -> None:
    query = TaskQuery(context_id=f"ctx-{task_id}", page_size=1)
    while not stop.is_set():  # a listing: always a query (a GetTask may come from a cache)
        took, page = await timed(store.list(query, owner=_bulk.OWNER))
        waits.append(took * 1e3)
        if [task.id for task in page.tasks] != [task_id]:
            out.errors += 1
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 0.02)


# --- the run -------------------------------------------------------------------------------------


def run_store(kind: str, args: argparse.Namespace, pin: bool, folder: Path) -> Figures:
    out = Figures()
    folder.mkdir(parents=True, exist_ok=True)
    with (
        instance(kind, folder, "small", args.small) as small,
        instance(kind, folder, "large", args.tasks) as large,
    ):
        insts = {"small": small, "large": large}
        for size, inst in insts.items():
            took = asyncio.run(load(inst))
            print(f"{kind}: loaded {inst.tasks:,} tasks ({size}) in {took:.1f} s", flush=True)
        asyncio.run(reads(insts, args, out))
        print(f"{kind}: reads measured", flush=True)
        sends(insts, args, pin, folder, out)
        print(f"{kind}: SendMessage measured", flush=True)
        with contextlib.ExitStack() as stack:
            boxes = {"empty": stack.enter_context(instance(kind, folder, "empty-outbox", 0))}
            asyncio.run(load(boxes["empty"]))
            for lanes in args.dead_lanes:
                boxes[f"{lanes}"] = box = stack.enter_context(
                    instance(kind, folder, f"backlog-{lanes}", 0)
                )
                asyncio.run(load_backlog(box, args.backlog, lanes))
            asyncio.run(outbox(boxes, args, out))
        print(f"{kind}: outbox measured", flush=True)
        asyncio.run(retention(large, args, out))
    return out


def report(kind: str, args: argparse.Namespace, out: Figures) -> None:
    print()
    print(f"### {kind}: {args.small:,} against {args.tasks:,} tasks")
    print()
    print("| figure | small | large | ratio | target | result |")
    print("|---|---|---|---|---|---|")
    for name, small, large, ratio, unit in out.lines:
        if unit in ("ms", "µs"):
            verdict = "met" if ratio <= TARGET else "MISSED"
            print(
                f"| {name} | {small:,.3f} {unit} | {large:,.3f} {unit} | {ratio:.2f}x "
                f"| <= {TARGET}x | {verdict} |"
            )
        elif name.startswith("longest"):
            verdict = "met" if small <= HOLD_TARGET * 1e3 else "MISSED"
            print(f"| {name} ({unit}) | | {small:,.1f} ms | | <= {HOLD_TARGET:g} s | {verdict} |")
        else:
            print(f"| {name} | | {small:,.1f} ms | | | |")
    print()
    print(f"{kind} errors: {out.errors}")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--tasks", type=int, default=1_000_000, help="tasks of the large store")
    parser.add_argument("--small", type=int, default=10_000, help="tasks of the reference store")
    parser.add_argument("--stores", default="sqlite,postgresql", help="sqlite, postgresql or both")
    parser.add_argument("--rounds", type=int, default=6, help="interleaved rounds per figure")
    parser.add_argument("--samples", type=int, default=1_000, help="reads per round")
    parser.add_argument("--sends", type=int, default=2_000, help="SendMessage calls per round")
    parser.add_argument("--backlog", type=int, default=100_000, help="dead webhook's rows")
    parser.add_argument(
        "--dead-lanes", default="1,1000", help="lanes the backlog is in, one run per number"
    )
    parser.add_argument("--deliveries", type=int, default=200, help="live deliveries per round")
    parser.add_argument(
        "--retention-limit", type=int, default=0, help="most tasks retention deletes (0: all)"
    )
    parser.add_argument("--quick", action="store_true", help="a smoke run, a few thousand tasks")
    args = parser.parse_args()
    if args.quick:
        args.tasks, args.small, args.rounds, args.samples = 2_000, 400, 2, 50
        args.retention_limit = 300
        args.sends, args.backlog, args.dead_lanes, args.deliveries = 100, 2_000, "1,20", 20
    args.stores = [s.strip() for s in args.stores.split(",") if s.strip()]
    if not set(args.stores) <= {"sqlite", "postgresql"} or not args.stores:
        parser.error("--stores takes sqlite, postgresql or both")
    args.dead_lanes = [int(n) for n in str(args.dead_lanes).split(",") if n.strip()]
    if not 0 < args.small < args.tasks or not all(1 <= n <= args.backlog for n in args.dead_lanes):
        parser.error("need 0 < --small < --tasks and 1 <= --dead-lanes <= --backlog")
    return args


def main() -> int:
    args = parse_args()
    pin = pin_load_generator()
    now = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    print(f"date:     {now}")
    print(
        f"machine:  {platform.platform()}, {os.cpu_count()} CPUs, python {platform.python_version()}"
    )
    placement = f"servers on CPU {SERVER_CORE}, this process on CPU {LOAD_CORE}"
    print(f"placement: {placement if pin else 'not pinned (needs CPUs 0 and 1)'}")
    if "postgresql" in args.stores:
        print(f"database: {_pg.server_facts(_pg.dsn())}")
    errors = 0
    with tempfile.TemporaryDirectory(prefix="a2a-scale-") as tmp:
        for kind in args.stores:
            out = run_store(kind, args, pin, Path(tmp, kind))
            report(kind, args, out)
            errors += out.errors
    print()
    print(f"errors: {errors}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
