"""Tables of benchmarks/server.py: pooled cells, the result table, the ratios and the targets.

Besides requests per second (which, on two cores, also depends on how fast the load generator
is), the ratios include *capacity*: requests per second of server CPU time. It tells what each
server could serve with its core to itself, so it stays meaningful when the client, not the
server, set the pace (as it does for the bare aiohttp ceiling).
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import json
import os
import platform
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from server_load import SEND, STREAM, LoadResult

KINDS = (SEND, STREAM)
Cells = dict[tuple[str, str, int], "Cell"]


@dataclass
class Cell:
    """Pooled measurements of one (server, workload, concurrency)."""

    load: LoadResult = field(default_factory=LoadResult)
    server_cpu: float = 0.0
    core_busy: float = 0.0
    load_core_busy: float = 0.0
    retries: int = 0
    client_cpu: float = 0.0
    rss_before: int = 0
    rss_after: int = 0
    db_cpu: float = 0.0  # CPU seconds of the PostgreSQL backends serving the server


def pool(into: Cell, cell: Cell) -> None:
    into.load.merge(cell.load)
    into.server_cpu += cell.server_cpu
    into.core_busy += cell.core_busy
    into.retries += cell.retries
    into.load_core_busy += cell.load_core_busy
    into.client_cpu += cell.client_cpu
    into.db_cpu += cell.db_cpu
    into.rss_before = cell.rss_before  # the last round's, like rss_after
    into.rss_after = cell.rss_after


def disturbance(cell: Cell) -> float:
    """The larger share of a CPU that other processes took from the server's or the client's.

    With a database on the machine (not pinned: its backends run on either CPU), the CPU time
    of both CPUs that neither the server, the client nor the database used, per second.
    """
    elapsed = cell.load.elapsed or 1.0
    if cell.db_cpu:
        ours = cell.server_cpu + cell.client_cpu + cell.db_cpu
        return max(0.0, cell.core_busy + cell.load_core_busy - ours) / elapsed
    server = max(0.0, cell.core_busy - cell.server_cpu)
    client = max(0.0, cell.load_core_busy - cell.client_cpu)
    return max(server, client) / elapsed


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def rate(cell: Cell) -> float:
    return cell.load.requests / cell.load.elapsed if cell.load.elapsed else 0.0


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def print_header(args: argparse.Namespace, placement: str) -> None:
    now = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    print(f"date:     {now}")
    print(f"machine:  {platform.platform()}, {_cpu_model()}, {os.cpu_count()} CPUs")
    print(f"python:   {platform.python_implementation()} {platform.python_version()}")
    deps = ["aiohttp", "orjson", "aiosqlite", "a2a-sdk", "starlette", "uvicorn", "protobuf"]
    print(
        "packages: "
        + ", ".join(f"{d} {_version(d)}" for d in deps)
        + f", SQLite {sqlite3.sqlite_version}"
    )
    print(f"pinning:  {placement}")
    print(
        f"load:     closed loop, concurrency {', '.join(map(str, args.concurrency))}; "
        f"{args.warmup:g} s warm-up + {args.duration:g} s measured per cell, {args.rounds} round(s)"
    )


def _other(busy: float, ours: float, elapsed: float) -> str:
    return f"{max(0.0, busy - ours) / elapsed * 100:.0f}" if elapsed else "-"


def print_table(cells: Cells) -> None:
    print()
    print(
        "| server | workload | conc | req/s | p50 ms | p99 ms | 1st event p50 ms "
        "| server CPU µs/req | server CPU % | client CPU % | other load CPU 0/1 % "
        "| RSS MB before → after | errors |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for (mode, kind, c), cell in cells.items():
        load = cell.load
        n = max(load.requests, 1)
        first = f"{_pct(load.first_event, 0.5) * 1e3:.2f}" if load.first_event else "-"
        print(
            f"| {mode} | {kind} | {c} | {rate(cell):,.0f} "
            f"| {_pct(load.latencies, 0.5) * 1e3:.2f} | {_pct(load.latencies, 0.99) * 1e3:.2f} "
            f"| {first} | {cell.server_cpu / n * 1e6:,.0f} "
            f"| {cell.server_cpu / load.elapsed * 100:.0f} "
            f"| {cell.client_cpu / load.elapsed * 100:.0f} "
            f"| {_other(cell.core_busy, cell.server_cpu, load.elapsed)}"
            f"/{_other(cell.load_core_busy, cell.client_cpu, load.elapsed)} "
            f"| {cell.rss_before / 2**20:.1f} → {cell.rss_after / 2**20:.1f} | {load.errors} |"
        )


def _ratio(a: Cell | None, b: Cell | None) -> float | None:
    if a is None or b is None or not rate(b):
        return None
    return rate(a) / rate(b)


def _capacity(a: Cell | None, b: Cell | None) -> float | None:
    """Ratio of requests per server CPU-second: what each could serve with its core to itself."""
    if a is None or b is None or not a.server_cpu or not b.server_cpu:
        return None
    return (a.load.requests / a.server_cpu) / (b.load.requests / b.server_cpu)


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}x"


def print_ratios(cells: Cells, concurrency: list[int]) -> None:
    print()
    print(
        "| workload | conc | sqlite/SDK req/s | memory/SDK req/s | sqlite p99 / SDK p99 "
        "| memory/ceiling req/s | sqlite/ceiling req/s | memory/ceiling capacity |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for kind in KINDS:
        for c in concurrency:
            sq, mem = cells.get(("ours-sqlite", kind, c)), cells.get(("ours-memory", kind, c))
            sdk, top = cells.get(("sdk", kind, c)), cells.get(("ceiling", kind, c))
            p99 = None
            if sq is not None and sdk is not None and sdk.load.latencies:
                p99 = _pct(sq.load.latencies, 0.99) / _pct(sdk.load.latencies, 0.99)
            print(
                f"| {kind} | {c} | {_fmt(_ratio(sq, sdk))} | {_fmt(_ratio(mem, sdk))} | {_fmt(p99)} "
                f"| {_fmt(_ratio(mem, top))} | {_fmt(_ratio(sq, top))} | {_fmt(_capacity(mem, top))} |"
            )


def print_targets(cells: Cells) -> None:
    get = cells.get
    sq_send, sdk_send = get(("ours-sqlite", SEND, 16)), get(("sdk", SEND, 16))
    sq_stream, sdk_stream = get(("ours-sqlite", STREAM, 16)), get(("sdk", STREAM, 16))
    mem_send, top_send = get(("ours-memory", SEND, 16)), get(("ceiling", SEND, 16))
    print()
    print("targets (concurrency 16, same run):")

    def line(what: str, value: float | None, goal: float, extra: str = "", ok: bool = True) -> None:
        if value is None:
            print(f"  {what}: not measured")
            return
        verdict = "met" if value >= goal and ok else "MISSED"
        print(f"  {what}: {value:.2f}x (goal >= {goal:g}x){extra}: {verdict}")

    extra, lower = "", True
    if sq_send is not None and sdk_send is not None:
        ours99, sdk99 = _pct(sq_send.load.latencies, 0.99), _pct(sdk_send.load.latencies, 0.99)
        lower = ours99 < sdk99
        extra = f"; p99 {ours99 * 1e3:.2f} ms vs SDK {sdk99 * 1e3:.2f} ms"
        extra += ", lower" if lower else ", NOT lower"
    line("SendMessage, SQLite store, ours/SDK req/s", _ratio(sq_send, sdk_send), 3.0, extra, lower)
    line(
        "SendStreamingMessage, SQLite store, ours/SDK streams/s", _ratio(sq_stream, sdk_stream), 3.0
    )
    line("SendMessage, in-memory store, ours/ceiling req/s", _ratio(mem_send, top_send), 0.5)
    capacity = _capacity(mem_send, top_send)
    if capacity is not None and top_send is not None and top_send.load.elapsed:
        busy = top_send.server_cpu / top_send.load.elapsed
        client = top_send.client_cpu / top_send.load.elapsed
        print(
            f"  (for reference: by capacity, requests per server CPU-second, in-memory/ceiling is "
            f"{capacity:.2f}x; the ceiling's server was {busy:.0%} busy, the client {client:.0%})"
        )


def print_before(cells: Cells, checkout: Path) -> None:
    """Each ratio of ours at concurrency 16 (to the SDK, and memory to the ceiling) against the
    same ratio of the earlier checkout's servers, measured in the same run.

    The SDK and the ceiling are the same processes for both, so "now / before" of a ratio is the
    ratio of our own throughputs; both are printed so the table reads against the ones above.
    """
    print()
    print(f"against the earlier checkout {checkout} (before-*), concurrency 16, same run:")
    print("| workload | ratio | now | before | now / before | not lower |")
    print("|---|---|---|---|---|---|")
    rows = [
        ("SQLite/SDK", "sqlite", "sdk"),
        ("memory/SDK", "memory", "sdk"),
        ("memory/ceiling", "memory", "ceiling"),
    ]
    for kind in KINDS:
        for label, store, reference in rows:
            ref = cells.get((reference, kind, 16))
            now = _ratio(cells.get((f"ours-{store}", kind, 16)), ref)
            then = _ratio(cells.get((f"before-{store}", kind, 16)), ref)
            change = now / then if now is not None and then else None
            verdict = "-" if change is None else ("yes" if change >= 1.0 else "NO")
            print(f"| {kind} | {label} | {_fmt(now)} | {_fmt(then)} | {_fmt(change)} | {verdict} |")


def dump_json(path: str, cells: Cells) -> None:
    rows = []
    for (mode, kind, c), cell in cells.items():
        load = cell.load
        rows.append(
            {
                "server": mode, "workload": kind, "concurrency": c, "requests": load.requests,
                "elapsed_s": load.elapsed, "rps": rate(cell), "errors": load.errors,
                "p50_ms": _pct(load.latencies, 0.5) * 1e3, "p99_ms": _pct(load.latencies, 0.99) * 1e3,
                "server_cpu_s": cell.server_cpu, "client_cpu_s": cell.client_cpu,
                "rss_before": cell.rss_before, "rss_after": cell.rss_after,
            }
        )  # fmt: skip
    Path(path).write_text(json.dumps(rows, indent=1) + "\n")
