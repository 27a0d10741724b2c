"""Client benchmark: CPU per call of a2a_wire's A2AClient against raw aiohttp and a2a-sdk's client.

Run ``.venv/bin/python benchmarks/client.py`` (about a minute and a half) or add ``--quick`` (a
few seconds, for a smoke run). One fixed-answer server (benchmarks/_fixed_answers.py: canned
answers, encoded once) runs in its own process pinned to CPU 0; each client runs in a process
of its own (benchmarks/_client_sides.py) pinned to CPU 1:

* ``a2a-wire``: :class:`a2a_wire.client.A2AClient`, connected through the card;
* ``raw-aiohttp``: an aiohttp session posting the same bytes and decoding each answer to the same
  typed result with a2a_wire's generated codec, and nothing else: the floor;
* ``a2a-sdk``: a2a-sdk 1.3.0's client (httpx), for reference.

Three cells: blocking SendMessage (a completed task with one artifact and one history message)
at concurrency 1 and 16, and SendStreamingMessage streams of ``--events`` artifact chunks plus
the task and the final status, read one stream at a time. A cell's cost is the client process's
CPU time (``time.process_time``, all its threads) per call, or per stream event. Each round
runs every cell on every side for ``--duration`` seconds, the order of the sides rotated from
round to round, after one warm-up of ``--warmup`` seconds; each figure is the median of the
rounds, and a ratio the median of the rounds' ratios, so that drift of the machine hits all
sides alike. The share of CPU 1 that other processes took during the measured batches is
reported: on a busy machine the ratios hold better than the absolute times.

The targets (issue 28): a2a-wire's CPU per blocking call at most 1.3x raw aiohttp's, per stream
event at most 2x. ``--tool callgrind`` counts instructions instead (each client under
``valgrind --tool=callgrind --instr-atstart=no``, switched on for 320 calls or 2 streams after
the warm-up; one round, about 3 minutes): a count does not move with other load, so it is the
figure to compare two versions of the code by on a busy machine. With ``--before CHECKOUT`` an
earlier checkout's client (``a2a-wire-before``) runs beside the current one, and each cell gets
its now/before ratio. Any error (a failed call, an answer of the wrong shape) makes the run exit
with status 1.
"""

from __future__ import annotations

import argparse
import datetime
import glob
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import _pg
from server_report import _cpu_model, _version

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SERVER_CORE, CLIENT_CORE = 0, 1
SIDES = ("a2a-wire", "raw-aiohttp", "a2a-sdk")
BEFORE = "a2a-wire-before"
REFERENCE = "raw-aiohttp"


@dataclass(frozen=True)
class Cell:
    """One workload: blocking SendMessage at a concurrency, or streams (per event)."""

    kind: str  # "send" or "stream"
    concurrency: int = 1

    @property
    def name(self) -> str:
        return f"SendMessage c={self.concurrency}" if self.kind == "send" else "stream"

    def label(self, tool: str) -> str:
        """The name and the unit: CPU µs (or instructions) per call, or per stream event."""
        unit = "CPU µs" if tool == "cpu" else "instructions"
        return f"{self.name}, {unit} per {'call' if self.kind == 'send' else 'event'}"

    def command(self, seconds: float, calls: int = 0) -> str:
        """The worker's command: run for ``seconds``, or ``calls`` calls (streams) if not 0."""
        if self.kind == "send":
            return f"send {self.concurrency} {seconds} {calls}"
        return f"stream {seconds} {calls}"

    @property
    def counted_calls(self) -> int:
        """Calls (streams) measured under callgrind."""
        return 320 if self.kind == "send" else 2

    @property
    def goal(self) -> float:
        """The issue's ceiling for a2a-wire / raw aiohttp."""
        return 1.3 if self.kind == "send" else 2.0


CELLS = (Cell("send", 1), Cell("send", 16), Cell("stream"))


@dataclass
class Figures:
    """What one side measured in one cell: one entry per round."""

    per_unit: list[float] = field(default_factory=list)  # CPU seconds per call or per event
    other: list[float] = field(default_factory=list)  # share of the CPU other processes took
    errors: int = 0
    first_error: str = ""


# --- processes ------------------------------------------------------------------------------------


def pinned() -> bool:
    """Whether CPUs 0 and 1 are both ours, so the server and the clients can each have one."""
    return hasattr(os, "sched_setaffinity") and {SERVER_CORE, CLIENT_CORE} <= os.sched_getaffinity(
        0
    )


@contextmanager
def fixed_server(events: int, pin: bool) -> Iterator[str]:
    """Run benchmarks/_fixed_answers.py; its base URL. Always stopped on exit."""
    port = _pg.free_port()
    cmd = [sys.executable, str(HERE / "_fixed_answers.py"), "--port", str(port)]
    cmd += ["--events", str(events)] + (["--core", str(SERVER_CORE)] if pin else [])
    process = subprocess.Popen(cmd, cwd=ROOT, stdin=subprocess.DEVNULL)
    try:
        _pg.wait_port(process, port, 30.0)
        yield f"http://{_pg.HOST}:{port}/"
    finally:
        _pg.stop(process)


def before_package(checkout: Path, into: Path) -> Path:
    """A directory holding ``checkout``'s a2a_wire, as installed (generated/ as _generated)."""
    package = into / "a2a_wire"
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(checkout / "runtime" / "a2a_wire", package, ignore=ignore)
    shutil.copytree(checkout / "generated", package / "_generated", ignore=ignore)
    return into


class Worker:
    """One side's process (benchmarks/_client_sides.py), driven through its stdin.

    With ``dumps`` (a path prefix) it runs under callgrind, instrumentation off until
    :meth:`count` switches it on around one batch.
    """

    def __init__(
        self, name: str, cmd: list[str], env: dict[str, str] | None, dumps: str | None = None
    ) -> None:
        self.name = name
        self.origin = ""
        self.dumps = dumps
        self.read: set[str] = set()
        if dumps is not None:
            tool = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--log-file={dumps}.log"]
            cmd = [*tool, f"--callgrind-out-file={dumps}", *cmd]
        self.process = subprocess.Popen(
            cmd,
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def _stdin(self) -> IO[str]:
        assert self.process.stdin is not None
        return self.process.stdin

    def _line(self) -> str:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"{self.name}: the client process exited ({self.process.wait()})")
        return line

    def wait_ready(self) -> None:
        word, _, self.origin = self._line().strip().partition(" ")
        if word != "ready":
            raise RuntimeError(f"{self.name}: unexpected first line {word!r}")

    def run(self, cell: Cell, seconds: float, calls: int = 0) -> dict[str, Any]:
        self._stdin().write(cell.command(seconds, calls) + "\n")
        self._stdin().flush()
        result: dict[str, Any] = json.loads(self._line())
        return result

    def count(self, cell: Cell) -> dict[str, Any]:
        """Run ``cell.counted_calls`` calls with callgrind on; ``cost`` is their instructions."""
        pid = str(self.process.pid)
        subprocess.run(["callgrind_control", "-i", "on", pid], check=True, capture_output=True)
        result = self.run(cell, 0, cell.counted_calls)
        subprocess.run(["callgrind_control", "-i", "off", pid], check=True, capture_output=True)
        subprocess.run(["callgrind_control", "-d", pid], check=True, capture_output=True)
        result["cost"] = self._dumped()
        return result

    def _dumped(self) -> int:
        """The instructions of the dump just asked for (written a little later, by the process)."""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            for dump in sorted(set(glob.glob(f"{self.dumps}.*")) - self.read):
                lines = Path(dump).read_text().splitlines()
                totals = [int(line.split()[1]) for line in lines if line.startswith("totals:")]
                if totals:
                    self.read.add(dump)
                    return max(totals)
            time.sleep(0.2)
        raise RuntimeError(f"{self.name}: callgrind wrote no counts")

    def stop(self) -> None:
        if self.process.poll() is None:
            try:
                self._stdin().write("quit\n")
                self._stdin().close()
                self.process.wait(timeout=20)
            except (OSError, subprocess.TimeoutExpired):
                self.process.kill()
                self.process.wait()


@contextmanager
def workers(args: argparse.Namespace, base: str, pin: bool) -> Iterator[dict[str, Worker]]:
    """Start one process per side and wait until each has checked its first answers."""
    with ExitStack() as stack:
        started: dict[str, Worker] = {}
        stack.callback(lambda: [w.stop() for w in started.values()])
        common = ["--url", base, "--events", str(args.events)]
        common += ["--core", str(CLIENT_CORE)] if pin else []
        script = str(HERE / "_client_sides.py")
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="a2a-bench-")))
        for name in args.sides:
            side = "a2a-wire" if name == BEFORE else name
            python, env = sys.executable, None
            if name == BEFORE:
                python, env = before_interpreter(args, stack)
            dumps = str(work / f"{name}.callgrind") if args.tool == "callgrind" else None
            started[name] = Worker(name, [python, script, side, *common], env, dumps)
        for worker in started.values():
            worker.wait_ready()
        yield started


def before_interpreter(args: argparse.Namespace, stack: ExitStack) -> tuple[str, dict[str, str]]:
    """The interpreter and environment of ``--before``: the checkout's own .venv if it has one,
    else this interpreter with the checkout's package first on ``PYTHONPATH``."""
    checkout: Path = args.before
    own = checkout / ".venv" / "bin" / "python"
    python = args.before_python or (str(own) if own.is_file() else None)
    if python is not None:
        return python, dict(os.environ)
    tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="a2a-bench-before-")))
    return sys.executable, {**os.environ, "PYTHONPATH": str(before_package(checkout, tmp))}


# --- measurement ---------------------------------------------------------------------------------


def measure(
    args: argparse.Namespace, running: dict[str, Worker]
) -> dict[tuple[Cell, str], Figures]:
    figures = {(cell, name): Figures() for cell in CELLS for name in running}
    names = list(running)
    for cell in CELLS:
        for name in names:
            running[name].run(cell, args.warmup)
    if args.tool == "callgrind":  # counts do not drift: one round
        for cell in CELLS:
            for name in names:
                record(figures[cell, name], cell, running[name].count(cell))
        return figures
    for r in range(args.rounds):
        order = names[r % len(names) :] + names[: r % len(names)]
        print(f"round {r + 1}/{args.rounds}: {', '.join(order)}", file=sys.stderr, flush=True)
        for cell in CELLS:
            for name in order:
                record(figures[cell, name], cell, running[name].run(cell, args.duration))
    return figures


def record(fig: Figures, cell: Cell, result: dict[str, Any]) -> None:
    units = result["events"] if cell.kind == "stream" else result["calls"]
    fig.errors += result["errors"]
    fig.first_error = fig.first_error or result["error"]
    if units:
        fig.per_unit.append(result.get("cost", result["cpu"]) / units)
    if result["other_cpu"] is not None and result["wall"]:
        fig.other.append(result["other_cpu"] / result["wall"])


def ratio(figures: dict[tuple[Cell, str], Figures], cell: Cell, top: str, bottom: str) -> float:
    """The median of the rounds' ``top / bottom`` (nan when either was not measured)."""
    a, b = figures.get((cell, top)), figures.get((cell, bottom))
    if a is None or b is None:
        return float("nan")
    pairs = [x / y for x, y in zip(a.per_unit, b.per_unit, strict=False) if y]
    return statistics.median(pairs) if pairs else float("nan")


# --- report --------------------------------------------------------------------------------------


def print_header(args: argparse.Namespace, pin: bool) -> None:
    now = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    print(f"date:     {now}")
    print(f"machine:  {platform.platform()}, {_cpu_model()}, {os.cpu_count()} CPUs")
    print(f"python:   {platform.python_implementation()} {platform.python_version()}")
    deps = ["aiohttp", "orjson", "a2a-sdk", "httpx", "protobuf"]
    print("packages: " + ", ".join(f"{d} {_version(d)}" for d in deps))
    where = f"server on CPU {SERVER_CORE}, each client in its own process on CPU {CLIENT_CORE}"
    print(f"pinning:  {where if pin else 'not pinned (needs CPUs 0 and 1)'}")
    work = f"SendMessage at concurrency 1 and 16, streams of {args.events + 2} events"
    if args.tool == "callgrind":
        counted = ", ".join(f"{c.counted_calls} ({c.name})" for c in CELLS)
        print(f"work:     {work}; instructions under callgrind of {counted} calls")
        return
    print(
        f"work:     {work}; {args.warmup:g} s warm-up, then {args.rounds} round(s) of "
        f"{args.duration:g} s per cell and client, the clients' order rotated each round"
    )


def _times(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.2f}x"


def print_table(args: argparse.Namespace, figures: dict[tuple[Cell, str], Figures]) -> None:
    names = args.sides
    print()
    print(f"| cell | {' | '.join(names)} | a2a-wire / {REFERENCE} | a2a-sdk / a2a-wire |")
    print("|---|" + "---:|" * (len(names) + 2))
    for cell in CELLS:
        row = []
        for name in names:
            fig = figures[cell, name]
            cost = statistics.median(fig.per_unit) if fig.per_unit else None
            shown = "-" if cost is None else f"{cost:,.0f}"
            row.append(f"{cost * 1e6:,.1f}" if cost is not None and args.tool == "cpu" else shown)
        wire = _times(ratio(figures, cell, "a2a-wire", REFERENCE))
        sdk = _times(ratio(figures, cell, "a2a-sdk", "a2a-wire"))
        print(f"| {cell.label(args.tool)} | {' | '.join(row)} | {wire} | {sdk} |")
    other = [x for fig in figures.values() for x in fig.other]
    if other and args.tool == "cpu":
        print()
        print(
            f"other processes took {statistics.median(other):.0%} of CPU {CLIENT_CORE} "
            f"(median over the measured batches; at most {max(other):.0%})"
        )


def print_targets(args: argparse.Namespace, figures: dict[tuple[Cell, str], Figures]) -> None:
    print()
    what = "CPU" if args.tool == "cpu" else "instructions"
    print(
        f"targets (a2a-wire / raw aiohttp, {what} per call or event, median of the rounds' ratios):"
    )
    for cell in CELLS:
        value = ratio(figures, cell, "a2a-wire", REFERENCE)
        verdict = "met" if round(value, 2) <= cell.goal else "MISSED"  # as printed
        print(f"  {cell.name}: {_times(value)} (goal <= {cell.goal:g}x): {verdict}")
    if args.before is not None:
        print()
        print(f"now / before (a2a-wire / {BEFORE}, {what} per call or event):")
        for cell in CELLS:
            now_before = _times(ratio(figures, cell, "a2a-wire", BEFORE))
            print(f"  {cell.name}: {now_before}")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 round of 0.3 s, short streams")
    parser.add_argument("--sides", default=",".join(SIDES), help="comma-separated subset")
    parser.add_argument("--rounds", type=int, default=None, help="rounds (default 5)")
    parser.add_argument("--duration", type=float, default=None, help="seconds per cell (2)")
    parser.add_argument("--warmup", type=float, default=None, help="warm-up seconds (0.5)")
    parser.add_argument("--events", type=int, default=None, help="chunks per stream (1000)")
    parser.add_argument("--before", type=Path, default=None, metavar="CHECKOUT")
    parser.add_argument("--before-python", default=None, help="its interpreter (see the doc)")
    parser.add_argument("--json", default=None, help="also write the raw figures here")
    parser.add_argument(
        "--tool",
        choices=("cpu", "callgrind"),
        default="cpu",
        help="CPU time (default), or instructions under callgrind (needs valgrind; one round)",
    )
    args = parser.parse_args(argv)
    args.sides = [s for s in args.sides.split(",") if s]
    unknown = set(args.sides) - set(SIDES)
    if unknown or "a2a-wire" not in args.sides:
        parser.error(f"--sides: choose from {SIDES}, a2a-wire included")
    if args.before is not None:
        if not (args.before / "runtime" / "a2a_wire").is_dir():
            parser.error(f"--before {args.before}: no runtime/a2a_wire there")
        args.sides.append(BEFORE)
    quick = args.quick
    args.rounds = args.rounds or (1 if quick else 5)
    args.duration = args.duration or (0.3 if quick else 2.0)
    args.warmup = args.warmup if args.warmup is not None else (0.1 if quick else 0.5)
    if args.tool == "callgrind":
        args.rounds, args.warmup = 1, max(args.warmup, 2.0)  # valgrind translates code at first
    args.events = args.events or (50 if quick else 1000)
    return args


def main() -> int:
    args = parse_args()
    pin = pinned()
    print_header(args, pin)
    with fixed_server(args.events, pin) as base, workers(args, base, pin) as running:
        for name, worker in running.items():
            print(f"client:   {name} from {worker.origin}")
        figures = measure(args, running)
    print_table(args, figures)
    print_targets(args, figures)
    if args.json:
        raw = {f"{c.kind}-{c.concurrency} {n}": vars(f) for (c, n), f in figures.items()}
        Path(args.json).write_text(json.dumps(raw, indent=1))
    errors = sum(fig.errors for fig in figures.values())
    print()
    print(f"errors: {errors}")
    for (cell, name), fig in figures.items():
        if fig.first_error:
            print(f"  {name} {cell.name}: {fig.first_error}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
