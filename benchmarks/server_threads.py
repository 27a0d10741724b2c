"""Where a server's time per request goes: its event loop, its other threads, and its disk.

Run ``.venv/bin/python benchmarks/server_threads.py --before CHECKOUT`` (about a minute per
round). For each server (``ours-sqlite`` by default, and ``before-sqlite``, an earlier checkout's,
with ``--before``), one process of benchmarks/_servers.py is started pinned as in
benchmarks/server.py, sent a warm-up, then ``--requests`` blocking SendMessage or
SendStreamingMessage requests at concurrency 16 (every answer checked by the load generator of
benchmarks/server.py). Read from /proc around the measured requests, per request:

* CPU of the event-loop thread (the main thread) and of every other thread (for the SQLite
  store: its connection's thread, where SQLite runs);
* bytes the process caused to be written to storage (``write_bytes`` of /proc/PID/io: the WAL
  and the checkpoints into the database file) and its read-family system calls (``syscr``:
  the event loop's wake-up pipe, and file pages that SQLite's cache did not hold).

Rounds alternate the order of the servers. CPU figures move by 10-20 % between rounds on a
shared machine; the bytes and system calls are repeatable. The last table gives each figure of
the first server against the second's (medians over the rounds).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

import server_load as load
from server import (
    Before,
    add_before_options,
    before_of,
    pin_load_generator,
    running,
)

KINDS = {"send": load.SEND, "stream": load.STREAM}
FIGURES = ("loop CPU µs", "other threads CPU µs", "KB written", "read syscalls")


@dataclass(frozen=True)
class Reading:
    """Counters of one server process at one moment."""

    loop: float
    others: float
    written: int
    reads: int


def read(pid: int) -> Reading:
    """The process's counters: thread CPU seconds (main, others), bytes written, read calls."""
    tick = os.sysconf("SC_CLK_TCK")
    loop = others = 0.0
    for tid in os.listdir(f"/proc/{pid}/task"):
        fields = Path(f"/proc/{pid}/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()
        seconds = (int(fields[11]) + int(fields[12])) / tick
        if tid == str(pid):
            loop += seconds
        else:
            others += seconds
    io = dict(line.split(": ") for line in Path(f"/proc/{pid}/io").read_text().splitlines())
    return Reading(loop, others, int(io["write_bytes"]), int(io["syscr"]))


def measure(
    mode: str, kind: str, requests: int, warmup: int, pin: bool, before: Before | None
) -> tuple[float, ...]:
    """The :data:`FIGURES` per request of one cell."""
    with running(mode, pin, before=before) as server:
        asyncio.run(load.run_checked(server.url, kind, warmup))
        start = read(server.process.pid)
        asyncio.run(load.run_checked(server.url, kind, requests))
        end = read(server.process.pid)
    return (
        (end.loop - start.loop) / requests * 1e6,
        (end.others - start.others) / requests * 1e6,
        (end.written - start.written) / requests / 1024,
        (end.reads - start.reads) / requests,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", default="ours-sqlite", help="comma-separated servers")
    parser.add_argument("--kinds", default="send,stream", help="send, stream or both")
    parser.add_argument("--requests", type=int, default=6000, help="measured requests per cell")
    parser.add_argument("--warmup", type=int, default=2000, help="requests before measuring")
    parser.add_argument("--rounds", type=int, default=2)
    add_before_options(parser)
    args = parser.parse_args()
    before = before_of(parser, args)
    modes = args.modes.split(",") + (["before-sqlite"] if before is not None else [])
    pin = pin_load_generator()
    cells: dict[tuple[str, str], list[tuple[float, ...]]] = {}
    print(
        f"| round | server | workload | {' | '.join(FIGURES)} |\n|---|---|---|---:|---:|---:|---:|"
    )
    for round_ in range(args.rounds):
        for mode in modes if round_ % 2 == 0 else modes[::-1]:
            for kind in args.kinds.split(","):
                figures = measure(mode, kind, args.requests, args.warmup, pin, before)
                cells.setdefault((mode, kind), []).append(figures)
                shown = " | ".join(f"{value:,.1f}" for value in figures)
                print(f"| {round_ + 1} | {mode} | {KINDS[kind]} | {shown} |", flush=True)
    if len(modes) >= 2:
        first, second = modes[:2]
        print(f"\n{first} / {second}, medians over the rounds:")
        print(f"| workload | {' | '.join(FIGURES)} |\n|---|---:|---:|---:|---:|")
        for kind in args.kinds.split(","):
            ours = [statistics.median(c) for c in zip(*cells[(first, kind)], strict=True)]
            theirs = [statistics.median(c) for c in zip(*cells[(second, kind)], strict=True)]
            ratios = " | ".join(
                f"{a / b:.2f}x" if b else "-" for a, b in zip(ours, theirs, strict=True)
            )
            print(f"| {KINDS[kind]} | {ratios} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
