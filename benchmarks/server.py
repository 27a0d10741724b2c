"""Server benchmark: a2a_wire against the official SDK and a bare aiohttp ceiling, same run.

Run ``.venv/bin/python benchmarks/server.py`` (about 4 minutes) or add ``--quick`` (concurrency 16
only, short runs, about 20 s). The servers of benchmarks/_servers.py are started one after the
other on 127.0.0.1, each in its own process pinned to CPU 0 while this process, the load
generator (benchmarks/server_load.py), is pinned to CPU 1:

* ``ours-sqlite``: a2a_wire on its default durable store (SQLite, WAL, synchronous=NORMAL);
* ``ours-memory``: a2a_wire on the in-memory store;
* ``sdk``: a2a-sdk's DefaultRequestHandler + InMemoryTaskStore, Starlette under uvicorn;
* ``ceiling``: a bare aiohttp handler that parses the body and answers a fixed result.

Each server gets a fixed-concurrency, closed-loop load of blocking SendMessage and of
SendStreamingMessage (three events) at each concurrency, for a fixed time after a short warm-up.
With ``--rounds 2`` (the default) every server is measured twice, in opposite orders, and the two
runs are pooled, so that drift of the machine hits all servers alike. For each cell the report
gives requests per second, p50 and p99 latency, the time to the first stream event, the server's
CPU time per request and its CPU and RSS (from /proc), and the load generator's own CPU use (near
100 % means the client, not the server, set the pace). Then the ratios ours/SDK and ours/ceiling
(by requests per second and by capacity, see benchmarks/server_report.py) and the issue's targets.
Any error (a failed request or an answer of the wrong shape) makes the run exit with status 1.
The codec benchmark (benchmarks/codec.py) runs last, in its own process. What telemetry costs
(not installed, installed but off, on) is benchmarks/telemetry.py's, on the same load.

The machine may be shared: /proc/stat tells how much of each of the two CPUs went to other
processes during a cell. A cell where that exceeds ``--max-other`` (10 %) is measured again, up
to ``--retries`` times (3; none with ``--quick``), and the least disturbed attempt is kept; the
report says how many cells were re-measured and how many stayed disturbed. Before each attempt
the run also waits, up to ``--wait-quiet`` seconds (20; none with ``--quick``), for half a second
in which other processes use less than half that share.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import _pg
from server_load import new_session, run_load
from server_report import (
    KINDS,
    Cell,
    Cells,
    disturbance,
    dump_json,
    pool,
    print_before,
    print_header,
    print_ratios,
    print_table,
    print_targets,
)

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
HOST = "127.0.0.1"
SERVERS = ("ours-sqlite", "ours-memory", "sdk", "ceiling")
PG_SERVERS = ("ours-postgresql", "ours-postgresql-x2", "sdk-postgresql")  # benchmarks/scale_send.py
BEFORE_SERVERS = ("before-sqlite", "before-memory")  # an earlier checkout's (--before)
SERVER_CORE, LOAD_CORE = 0, 1
TICK = os.sysconf("SC_CLK_TCK")


# --- server processes ----------------------------------------------------------------------------


def _core_busy(core: int) -> float | None:
    """Seconds CPU ``core`` has been busy since boot (anything but idle and iowait), from /proc."""
    try:
        lines = Path("/proc/stat").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        name, *ticks = line.split()
        if name == f"cpu{core}":
            values = [int(t) for t in ticks[:8]]
            return (sum(values) - values[3] - values[4]) / TICK
    return None


@dataclass
class Server:
    """One running server process (with its children: the workers of ``serve --workers``).

    ``database`` is the DSN and schema of a PostgreSQL server's tables, whose backends' CPU
    time is counted as well (:func:`_pg.backend_cpu`).
    """

    mode: str
    process: subprocess.Popen[bytes]
    url: str
    database: tuple[str, str] | None = None

    def stats(self) -> tuple[float | None, int | None]:
        """CPU seconds and RSS bytes of the process and its descendants."""
        return _pg.tree_stats(self.process.pid)

    async def db_cpu(self) -> dict[int, float]:
        return await _pg.backend_cpu(*self.database) if self.database else {}


@dataclass(frozen=True)
class Before:
    """An earlier checkout of the project (``--before``), run beside the current one.

    Its servers ``before-sqlite`` and ``before-memory`` are that checkout's own
    benchmarks/_servers.py modes ``ours-sqlite`` and ``ours-memory``, started with ``python``
    (an interpreter that has that checkout installed, by default ``CHECKOUT/.venv/bin/python``).
    """

    checkout: Path
    python: str


def server_command(mode: str, port: int, before: Before | None) -> tuple[list[str], Path]:
    """The command line that serves ``mode`` on ``port``, and the directory to run it in."""
    if mode in BEFORE_SERVERS:
        if before is None:
            raise ValueError(f"{mode} needs --before")
        script = before.checkout / "benchmarks" / "_servers.py"
        ours = "ours-" + mode.removeprefix("before-")
        return [before.python, str(script), ours, "--port", str(port)], before.checkout
    return [sys.executable, str(HERE / "_servers.py"), mode, "--port", str(port)], ROOT


@contextmanager
def running(
    mode: str,
    pin: bool,
    db: Path | None = None,
    extra: Sequence[str] = (),
    before: Before | None = None,
) -> Iterator[Server]:
    """Start the server ``mode`` in its own process; it is always stopped on exit.

    ``ours-sqlite``, ``before-sqlite`` and ``sdk-sqlite`` use the file ``db``, or one in a
    temporary directory removed afterwards; ``extra`` goes to benchmarks/_servers.py (e.g.
    ``--agent chunks``). The :data:`BEFORE_SERVERS` need ``before``. The :data:`PG_SERVERS` run
    on a schema of their own (:func:`running_postgresql`).
    """
    if mode in PG_SERVERS:
        with running_postgresql(mode, pin) as server:
            yield server
        return
    port = _pg.free_port()
    with tempfile.TemporaryDirectory(prefix="a2a-bench-") as tmp:
        cmd, cwd = server_command(mode, port, before)
        cmd += extra
        if pin:
            cmd += ["--core", str(SERVER_CORE)]
        if mode.endswith("-sqlite"):
            cmd += ["--db", str(db or Path(tmp, "tasks.db"))]
        process = subprocess.Popen(cmd, cwd=cwd, stdin=subprocess.DEVNULL)
        try:
            _pg.wait_port(process, port, 30.0)
            yield Server(mode, process, f"http://{HOST}:{port}/")
        finally:
            _pg.stop(process)


@contextmanager
def running_postgresql(mode: str, pin: bool) -> Iterator[Server]:
    """A :data:`PG_SERVERS` server on a new schema of ``_pg.dsn()``, dropped after it stops.

    ``ours-postgresql`` is ``a2a-wire serve`` on ``storage = "postgresql"``, one process;
    ``ours-postgresql-x2`` the same with ``--workers 2`` (supervisor and both workers pinned to
    the server's CPU); ``sdk-postgresql`` the SDK's cluster mode, one uvicorn process.
    """
    address = _pg.dsn()
    with (
        tempfile.TemporaryDirectory(prefix="a2a-bench-") as tmp,
        _pg.schema(address, create=mode.startswith("sdk")) as name,
    ):
        if mode.startswith("sdk"):
            serving = _pg.serve_sdk(address, name, core=SERVER_CORE if pin else None)
        else:
            workers = 2 if mode.endswith("-x2") else 1
            cores = [SERVER_CORE] if pin else None
            serving = _pg.serve_ours(Path(tmp), address, name, workers=workers, cores=cores)
        with serving as (process, url):
            yield Server(mode, process, url, database=(address, name))


# --- measurement ---------------------------------------------------------------------------------


async def measure(
    server: Server, kind: str, concurrency: int, warmup: float, duration: float
) -> Cell:
    """Warm up, then run one measured load against ``server``."""
    async with new_session(concurrency) as session:
        warm = await run_load(session, server.url, kind, concurrency, warmup)
        db0 = await server.db_cpu()
        cpu0, rss0 = server.stats()
        busy0, lbusy0 = _core_busy(SERVER_CORE), _core_busy(LOAD_CORE)
        client0 = time.process_time()
        load = await run_load(session, server.url, kind, concurrency, duration)
        client1 = time.process_time()
        busy1, lbusy1 = _core_busy(SERVER_CORE), _core_busy(LOAD_CORE)
        cpu1, rss1 = server.stats()
        db1 = await server.db_cpu()
    load.errors += warm.errors
    load.samples = (warm.samples + load.samples)[:5]
    cell = Cell(load=load, client_cpu=client1 - client0, db_cpu=_pg.cpu_delta(db0, db1))
    if cpu0 is not None and cpu1 is not None:
        cell.server_cpu = cpu1 - cpu0
    if busy0 is not None and busy1 is not None:
        cell.core_busy = busy1 - busy0
    if lbusy0 is not None and lbusy1 is not None:
        cell.load_core_busy = lbusy1 - lbusy0
    cell.rss_before, cell.rss_after = rss0 or 0, rss1 or 0
    return cell


def run_all(args: argparse.Namespace, pin: bool) -> Cells:
    cells: Cells = {}
    for r in range(args.rounds):
        order = args.servers if r % 2 == 0 else args.servers[::-1]
        for mode in order:
            print(f"round {r + 1}/{args.rounds}: {mode} ...", file=sys.stderr, flush=True)
            with running(mode, pin, before=args.before) as server:
                for kind in args.kinds:
                    for c in args.concurrency:
                        cell = measure_quietly(server, kind, c, args)
                        pool(cells.setdefault((mode, kind, c), Cell()), cell)
    return cells


def _busy_elsewhere(server: Server, window: float = 0.5) -> float:
    """The larger share of CPU 0 or 1 that other processes used over ``window`` seconds."""
    cpu0, _ = server.stats()
    own0, busy0, lbusy0 = time.process_time(), _core_busy(SERVER_CORE), _core_busy(LOAD_CORE)
    time.sleep(window)
    cpu1, _ = server.stats()
    own1, busy1, lbusy1 = time.process_time(), _core_busy(SERVER_CORE), _core_busy(LOAD_CORE)
    if None in (cpu0, cpu1, busy0, busy1, lbusy0, lbusy1):
        return 0.0
    assert cpu0 is not None and cpu1 is not None and busy0 is not None and busy1 is not None
    assert lbusy0 is not None and lbusy1 is not None
    server_side = (busy1 - busy0) - (cpu1 - cpu0)
    client_side = (lbusy1 - lbusy0) - (own1 - own0)
    return max(server_side, client_side, 0.0) / window


def wait_quiet(server: Server, args: argparse.Namespace) -> None:
    """Wait (up to ``--wait-quiet`` seconds) until other processes leave both CPUs alone."""
    deadline = time.monotonic() + args.wait_quiet
    while time.monotonic() < deadline and _busy_elsewhere(server) > args.max_other / 2:
        pass


def measure_quietly(server: Server, kind: str, c: int, args: argparse.Namespace) -> Cell:
    """Measure; while other processes took over ``--max-other`` of a CPU, measure again.

    Each attempt first waits for a quiet moment; the least disturbed attempt is kept, with the
    errors of all attempts.
    """
    wait_quiet(server, args)
    attempts = [asyncio.run(measure(server, kind, c, args.warmup, args.duration))]
    while disturbance(attempts[-1]) > args.max_other and len(attempts) <= args.retries:
        wait_quiet(server, args)
        attempts.append(asyncio.run(measure(server, kind, c, args.warmup, args.duration)))
    best = min(attempts, key=disturbance)
    best.load.errors = sum(a.load.errors for a in attempts)
    best.load.samples = [x for a in attempts for x in a.load.samples][:5]
    best.retries = len(attempts) - 1
    return best


def run_codec(quick: bool) -> int:
    print()
    print("codec (benchmarks/codec.py" + (" --quick" if quick else "") + "):")
    cmd = [sys.executable, str(HERE / "codec.py"), *(["--quick"] if quick else [])]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    print(done.stdout.rstrip())
    if done.returncode != 0:
        print(done.stderr.rstrip())
    return done.returncode


def parse_args(servers: Sequence[str] = SERVERS, doc: str = __doc__) -> argparse.Namespace:
    """The options; ``servers`` is the default of ``--servers`` (benchmarks/scale_send.py's own)."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="concurrency 16, 1 s per cell, 1 round"
    )
    parser.add_argument("--servers", default=",".join(servers), help="comma-separated subset")
    parser.add_argument("--concurrency", default=None, help="comma-separated, default 1,16,64")
    parser.add_argument("--duration", type=float, default=None, help="measured seconds per cell")
    parser.add_argument("--warmup", type=float, default=None, help="warm-up seconds per cell")
    parser.add_argument("--rounds", type=int, default=None, help="rounds (orders alternate)")
    parser.add_argument(
        "--max-other", type=float, default=0.10, help="CPU share other processes may take"
    )
    parser.add_argument("--retries", type=int, default=None, help="re-measurements if disturbed")
    parser.add_argument(
        "--wait-quiet", type=float, default=None, help="seconds to wait for idle CPUs per cell"
    )
    parser.add_argument("--no-codec", action="store_true", help="skip benchmarks/codec.py")
    parser.add_argument("--json", default=None, help="also write the raw figures here")
    add_before_options(parser)
    args = parser.parse_args()
    quick = args.quick
    args.servers = [s for s in args.servers.split(",") if s]
    args.kinds = KINDS
    known = SERVERS + PG_SERVERS + BEFORE_SERVERS
    unknown = set(args.servers) - set(known)
    if unknown:
        parser.error(f"unknown servers: {sorted(unknown)}; choose from {known}")
    args.before = _before(parser, args)
    if args.before is not None and not set(BEFORE_SERVERS) & set(args.servers):
        args.servers = [*args.servers, *BEFORE_SERVERS]
    default_c = "16" if quick else "1,16,64"
    args.concurrency = [int(c) for c in (args.concurrency or default_c).split(",")]
    args.duration = args.duration or (1.0 if quick else 3.0)
    args.warmup = args.warmup if args.warmup is not None else (0.3 if quick else 0.5)
    args.rounds = args.rounds or (1 if quick else 2)
    if args.retries is None:
        args.retries = 0 if quick else 3
    if args.wait_quiet is None:
        args.wait_quiet = 0.0 if quick else 20.0
    return args


def add_before_options(parser: argparse.ArgumentParser) -> None:
    """``--before CHECKOUT`` and ``--before-python PY`` (:class:`Before`); also for
    benchmarks/server_instructions.py."""
    parser.add_argument(
        "--before",
        default=None,
        metavar="CHECKOUT",
        help="also measure this earlier checkout's ours-sqlite and ours-memory (before-*)",
    )
    parser.add_argument(
        "--before-python", default=None, help="its interpreter (default CHECKOUT/.venv/bin/python)"
    )


def before_of(parser: argparse.ArgumentParser, args: argparse.Namespace) -> Before | None:
    """The :class:`Before` that ``--before`` names, checked; ``None`` without it."""
    if args.before is None:
        return None
    checkout = Path(args.before).resolve()
    python = args.before_python or str(checkout / ".venv" / "bin" / "python")
    if not (checkout / "benchmarks" / "_servers.py").is_file():
        parser.error(f"--before {checkout}: no benchmarks/_servers.py there")
    if not Path(python).is_file():
        parser.error(f"--before-python {python}: no such interpreter")
    return Before(checkout, python)


def _before(parser: argparse.ArgumentParser, args: argparse.Namespace) -> Before | None:
    if args.before is None and set(BEFORE_SERVERS) & set(args.servers):
        parser.error(f"{BEFORE_SERVERS} need --before CHECKOUT")
    return before_of(parser, args)


def pin_load_generator() -> bool:
    """Move this process to LOAD_CORE when both cores are ours; whether servers get pinned too."""
    pin = hasattr(os, "sched_setaffinity") and {SERVER_CORE, LOAD_CORE} <= os.sched_getaffinity(0)
    if pin:
        os.sched_setaffinity(0, {LOAD_CORE})
    return pin


def main() -> int:
    args = parse_args()
    pin = pin_load_generator()
    placement = f"server on CPU {SERVER_CORE}, load generator on CPU {LOAD_CORE}"
    print_header(args, placement if pin else "not pinned (needs CPUs 0 and 1)")
    cells = run_all(args, pin)
    print_table(cells)
    retried = sum(cell.retries for cell in cells.values())
    disturbed = [key for key, cell in cells.items() if disturbance(cell) > args.max_other]
    print()
    print(
        f"re-measured {retried} time(s) because other processes took over "
        f"{args.max_other:.0%} of a CPU; still disturbed: {len(disturbed)} cell(s)"
    )
    print_ratios(cells, args.concurrency)
    print_targets(cells)
    if args.before is not None:
        print_before(cells, args.before.checkout)
    if args.json:
        dump_json(args.json, cells)
    errors = sum(cell.load.errors for cell in cells.values())
    status = 0 if args.no_codec else run_codec(args.quick)
    print()
    print(f"errors: {errors}")
    for (mode, kind, c), cell in cells.items():
        for sample in cell.load.samples:
            print(f"  {mode} {kind} c={c}: {sample}")
    return 1 if errors or status else 0


if __name__ == "__main__":
    sys.exit(main())
