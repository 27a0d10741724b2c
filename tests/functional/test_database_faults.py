"""Faults of PostgreSQL under three ``a2a-wire serve`` processes with a mixed load (issue 23).

A throwaway cluster (``pg_cluster``), three processes on one schema, each process's database
connection through a :class:`~fault_proxy.FaultProxy` of its own, and the load of
:mod:`fault_load` (blocking and streamed sends, cancels, follow-ups, reads, readiness probes).
Each case injects one fault while the load runs: PostgreSQL restarted, PostgreSQL stopped for
30 s, or one process's connection stalled for 20 s (the proxy stops forwarding but keeps the
sockets open); each also with a SIGKILL of another process during the fault. After each:

* no acknowledged task lost, no acknowledged terminal state changed, every CANCELED kept;
* no task SUBMITTED or WORKING two leases after the fault ended (the measured time is printed);
* no -32603 and no HTTP 500: a 503 with ``Retry-After`` and -32000 instead; no request held
  longer than the statement timeout plus a second (a CancelTask of a task run by a stalled
  process: ``cancel_grace_seconds`` plus the cancel's way there and back, then it cancels the
  task itself); no follow-up refused with -32004;
* every stream, resumed as a client should (after a drop, an error event or a 503), ended with
  its task's final event, with no gap and no duplicate;
* nothing logged for a task after its end, and every agent run on a live process has ended;
* no traceback in any process's log (an outage is a warning when it begins and one at its end);
* a stalled process's ``/readyz`` said not ready within the statement timeout.

docs/scale-out.md "Database faults" says what a client sees. Run one case with ``-s`` for its
figures: ``.venv/bin/pytest -s tests/functional/test_database_faults.py -k stall``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import aiohttp
import pytest
from fault_load import WORKERS, FaultLoad, figures, findings, unended_runs
from fault_proxy import FaultProxy
from patience import PATIENCE
from pg_support import Cluster as PostgresCluster
from pg_support import drop_schema, new_schema
from soak_checks import settle
from soak_support import Cluster

from a2a_wire.server._cancel import CANCEL_REACH_SECONDS

LEASE_SECONDS = 6.0
HEARTBEAT_SECONDS = 1.0
STATEMENT_SECONDS = 2.0
"""The processes' connect, statement and acquire timeouts."""
READINESS_SECONDS = 1.0
HELD_BOUND = STATEMENT_SECONDS + 1.0
"""The longest any request may take, during a fault or not, but a CancelTask."""
CANCEL_GRACE_SECONDS = 5.0
CANCEL_BOUND = CANCEL_GRACE_SECONDS + CANCEL_REACH_SECONDS + 1.0
"""A CancelTask sent to another process than the stalled one running the task waits that long
for the stalled one to stop its agent (``cancel_grace_seconds`` and the way there and back),
then cancels the task itself."""
MARGIN = 10.0
"""Seconds past two leases that a busy 2-core machine may take to settle the last task."""
STALLED = 1
"""The process whose connection the stall case stalls."""
KILLED = 0
"""The process the kill cases SIGKILL during the fault (then start again after it)."""

POSTGRESQL = f"""
connect_timeout_seconds = {STATEMENT_SECONDS}
statement_timeout_seconds = {STATEMENT_SECONDS}
acquire_timeout_seconds = {STATEMENT_SECONDS}
"""
LIMITS = f"""
store_retry_after_seconds = 1.0
stream_outage_seconds = 5.0
readiness_timeout_seconds = {READINESS_SECONDS}
cancel_grace_seconds = {CANCEL_GRACE_SECONDS}
"""

# With -n, on the worker of the other suites that load the machine (tests/conftest.py).
# alone: it bounds how long requests are held during a fault, so it runs after the parallel run,
# by itself (the Makefile's test target), never beside other tests' load.
pytestmark = [pytest.mark.slow, pytest.mark.alone, pytest.mark.timeout(600)]


async def _restart(pg: PostgresCluster, proxies: list[FaultProxy]) -> None:
    await asyncio.to_thread(pg.restart)


async def _stop(pg: PostgresCluster, proxies: list[FaultProxy]) -> None:
    await asyncio.to_thread(pg.stop_server)
    try:
        await asyncio.sleep(30.0)  # the fault's length, not a wait for something
    finally:
        await asyncio.to_thread(pg.start_server)


async def _stall(pg: PostgresCluster, proxies: list[FaultProxy]) -> None:
    proxies[STALLED].stall()
    try:
        await asyncio.sleep(20.0)  # the fault's length
    finally:
        await proxies[STALLED].heal()


FAULTS: dict[str, Callable[[PostgresCluster, list[FaultProxy]], Awaitable[None]]] = {
    "restart": _restart,
    "stop-30s": _stop,
    "stall-20s": _stall,
}


async def _acknowledged(load: FaultLoad, more: int) -> None:
    """Return once ``more`` tasks beyond those acknowledged now are acknowledged."""
    target = len(load.acked) + more
    async with asyncio.timeout(PATIENCE):
        while len(load.acked) < target:
            await asyncio.sleep(0.05)


def _readiness_problems(load: FaultLoad, began: float) -> tuple[list[str], float]:
    """The stalled process said not ready within the statement timeout; and when it did."""
    probes = [a for a in load.answers if a.method == "GET /readyz" and a.process == STALLED]
    during = [a for a in probes if a.phase == "fault"]
    refused = [a.started + a.seconds - began for a in during if a.status == 503]
    said = min(refused, default=float("inf"))
    if said > STATEMENT_SECONDS + 1.0:
        return [f"the stalled process said not ready {said:.2f} s into the stall"], said
    return [], said


@pytest.mark.parametrize("kill", [False, True], ids=["alone", "with-a-kill"])
@pytest.mark.parametrize("fault", list(FAULTS))
async def test_a_database_fault_under_load_loses_nothing_and_every_run_ends(
    fault: str, kill: bool, pg_cluster: PostgresCluster, tmp_path: Path
) -> None:
    schema = new_schema()
    proxies = [await FaultProxy("127.0.0.1", pg_cluster.port).start() for _ in range(3)]
    cluster = Cluster(
        tmp_path,
        pg_cluster.dsn,
        schema,
        LEASE_SECONDS,
        HEARTBEAT_SECONDS,
        dsns=[proxy.dsn() for proxy in proxies],
        postgresql=POSTGRESQL,
        limits=LIMITS,
    )
    workers: list[asyncio.Task[None]] = []
    try:
        await cluster.start()
        async with aiohttp.ClientSession() as session:
            load = FaultLoad(cluster, session)
            workers = [asyncio.ensure_future(worker(load)) for worker in WORKERS]
            await _acknowledged(load, 10)  # the load runs
            load.phase, began = "fault", time.monotonic()
            injected = asyncio.ensure_future(FAULTS[fault](pg_cluster, proxies))
            if kill:
                await cluster.kill(KILLED)
            await injected
            load.phase, healed = "after", time.monotonic()
            if kill:
                await cluster.restart(KILLED)
            await _acknowledged(load, 10)  # the load runs again
            load.stop.set()
            async with asyncio.timeout(PATIENCE * 3):
                await asyncio.gather(*workers)
            bound = 2 * LEASE_SECONDS + MARGIN
            await settle(pg_cluster.dsn, schema, bound)
            settled = time.monotonic() - healed
            problems = await findings(load, pg_cluster.dsn, schema, HELD_BOUND, CANCEL_BOUND)
            problems += await unended_runs(cluster, LEASE_SECONDS + MARGIN)
            problems += [  # an outage is one warning when it begins and one when it ends
                f"server {index} logged a traceback"
                for index, server in enumerate(cluster.servers)
                if "Traceback" in server.log()
            ]
            said = float("nan")
            if fault.startswith("stall"):
                late, said = _readiness_problems(load, began)
                problems += late
        print(
            f"\n{fault} {'with a kill' if kill else 'alone'}: fault {healed - began:.1f} s;"
            f" none running {settled:.1f} s after it; stalled process not ready after"
            f" {said:.2f} s; {figures(load)}"
        )
        if settled > bound:
            problems.append(f"tasks ran on {settled:.1f} s after the fault (bound {bound} s)")
        assert not problems, "\n".join(problems[:40])
    except BaseException:
        print(cluster.logs())
        raise
    finally:
        for worker in workers:
            worker.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        cluster.close()
        for proxy in proxies:
            await proxy.close()
        await drop_schema(pg_cluster.dsn, schema)
