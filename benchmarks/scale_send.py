"""SendMessage on PostgreSQL with one and two worker processes, against SQLite and the SDK, same run.

Run ``.venv/bin/python benchmarks/scale_send.py`` (about two minutes) or add ``--quick`` (1 s per
cell, one round, no re-measuring: a smoke run, not judged). PostgreSQL is ``$A2A_WIRE_BENCH_DSN``,
else ``$A2A_WIRE_TEST_POSTGRES_DSN``, else ``postgresql://postgres@127.0.0.1:5432/test``; each
PostgreSQL server works in a schema of its own, dropped afterwards (benchmarks/_pg.py).

The machinery is benchmarks/server.py's (closed-loop load of blocking SendMessage at concurrency
16, every answer checked, two rounds in opposite orders, disturbed cells re-measured), applied
to these servers, one after the other:

* ``ours-sqlite``: a2a_wire on its default store, SQLite (benchmarks/_servers.py);
* ``ours-postgresql``: ``a2a-wire serve`` on ``storage = "postgresql"``, one process;
* ``ours-postgresql-x2``: the same with ``--workers 2`` (a supervisor and two workers sharing
  one listening socket);
* ``sdk``: a2a-sdk 1.3.0 on its in-memory store (the reference of benchmarks/server.py);
* ``sdk-postgresql``: a2a-sdk 1.3.0's cluster mode on the same PostgreSQL database, one process
  (benchmarks/_sdk_servers.py).

Placement on a two-CPU machine: every server process is pinned to CPU 0 (with ``--workers 2``,
the supervisor and both workers: they share CPU 0), the load generator to CPU 1, and the
PostgreSQL server, shared with the rest of the machine, is not pinned: its backends run on
either CPU. Two workers therefore cannot serve more than one here: the cell measures what
running two processes costs (or saves: one process's pauses, such as waiting for a commit, are
another's chance to run), not a speed-up, which needs a CPU per worker besides the load
generator's and the database's. The database's work is counted: the CPU time of the backends
serving a server's connections (found by ``application_name``, read from /proc) is shown per
request, and *capacity* is requests per CPU-second of server and database together.
"""

from __future__ import annotations

import sys
from importlib.metadata import version

import _pg
from server import LOAD_CORE, PG_SERVERS, SERVER_CORE, parse_args, pin_load_generator, run_all
from server_load import SEND
from server_report import Cell, Cells, _pct, disturbance, print_header, rate

SERVERS = ("ours-sqlite", "ours-postgresql", "ours-postgresql-x2", "sdk", "sdk-postgresql")
RATIOS = (
    ("ours-postgresql", "ours-sqlite"),
    ("ours-postgresql-x2", "ours-postgresql"),
    ("ours-postgresql", "sdk"),
    ("ours-postgresql", "sdk-postgresql"),
    ("ours-postgresql-x2", "sdk-postgresql"),
    ("ours-sqlite", "sdk"),
)
C = 16


def _capacity(cell: Cell) -> float:
    """Requests per CPU-second of the server and its database together."""
    cpu = cell.server_cpu + cell.db_cpu
    return cell.load.requests / cpu if cpu else 0.0


def print_table(cells: Cells) -> None:
    print()
    print(
        "| server | req/s | p50 ms | p99 ms | server CPU µs/req | database CPU µs/req "
        "| server CPU % | client CPU % | other load % | RSS MB | errors |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for (mode, _, _), cell in cells.items():
        load, n = cell.load, max(cell.load.requests, 1)
        elapsed = load.elapsed or 1.0
        db = f"{cell.db_cpu / n * 1e6:,.0f}" if mode in PG_SERVERS else "-"
        print(
            f"| {mode} | {rate(cell):,.0f} | {_pct(load.latencies, 0.5) * 1e3:.2f} "
            f"| {_pct(load.latencies, 0.99) * 1e3:.2f} | {cell.server_cpu / n * 1e6:,.0f} | {db} "
            f"| {cell.server_cpu / elapsed * 100:.0f} | {cell.client_cpu / elapsed * 100:.0f} "
            f"| {disturbance(cell) * 100:.0f} | {cell.rss_after / 2**20:.1f} | {load.errors} |"
        )


def print_ratios(cells: Cells) -> None:
    print()
    print("| ratio | req/s | p99 | capacity (per server + database CPU-second) |")
    print("|---|---|---|---|")
    for a, b in RATIOS:
        x, y = cells.get((a, SEND, C)), cells.get((b, SEND, C))
        if x is None or y is None or not rate(y) or not y.load.latencies:
            continue
        p99 = _pct(x.load.latencies, 0.99) / _pct(y.load.latencies, 0.99)
        capacity = _capacity(x) / _capacity(y) if _capacity(y) else float("nan")
        print(f"| {a} / {b} | {rate(x) / rate(y):.2f}x | {p99:.2f}x | {capacity:.2f}x |")


def main() -> int:
    args = parse_args(SERVERS, __doc__)
    args.kinds, args.concurrency = (SEND,), [C]
    pin = pin_load_generator()
    placement = (
        f"servers (all their processes) on CPU {SERVER_CORE}, load generator on CPU {LOAD_CORE}, "
        "PostgreSQL not pinned"
    )
    print_header(args, placement if pin else "not pinned (needs CPUs 0 and 1)")
    print(f"database: {_pg.server_facts(_pg.dsn())}, asyncpg {version('asyncpg')}, "
          f"SQLAlchemy {version('sqlalchemy')}")  # fmt: skip
    cells = run_all(args, pin)
    print_table(cells)
    print_ratios(cells)
    retried = sum(cell.retries for cell in cells.values())
    disturbed = [key for key, cell in cells.items() if disturbance(cell) > args.max_other]
    errors = sum(cell.load.errors for cell in cells.values())
    print()
    print(f"re-measured {retried} time(s); still disturbed: {len(disturbed)} cell(s)")
    print(f"errors: {errors}")
    for (mode, _, _), cell in cells.items():
        for sample in cell.load.samples:
            print(f"  {mode}: {sample}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
