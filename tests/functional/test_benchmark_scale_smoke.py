"""Smoke runs of the scale-out benchmarks on PostgreSQL: they finish, error-free, with tables.

benchmarks/scale_latency.py (an event from process A to a subscriber on process B) and
benchmarks/scale_send.py (SendMessage on 1 and 2 workers), each in its quick mode on the test
server (``postgres_dsn``). The figures are not checked (a short run on a shared machine is
noise); the full runs are in docs/performance.md. Each run leaves no schema behind.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from pathlib import Path

import asyncpg
import pytest

# One worker for the module: each test checks that its benchmark dropped the bench_ schemas it
# made, which a benchmark of the module running beside it would make meanwhile.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("bench-schemas")]

ROOT = Path(__file__).resolve().parents[2]
LATENCY = ROOT / "benchmarks" / "scale_latency.py"
SEND = ROOT / "benchmarks" / "scale_send.py"
NUMBER = r"[\d,.]+"


async def _bench_schemas(dsn: str) -> set[str]:
    conn = await asyncpg.connect(dsn)
    try:
        rows = await conn.fetch(
            "SELECT schema_name FROM information_schema.schemata WHERE schema_name LIKE 'bench_%'"
        )
    finally:
        await conn.close()
    return {row["schema_name"] for row in rows}


def _run(script: Path, dsn: str, *args: str) -> str:
    """Run a benchmark on ``dsn``; its output, after checking that it left no schema behind."""
    before = asyncio.run(_bench_schemas(dsn))
    env = {**os.environ, "A2A_WIRE_BENCH_DSN": dsn}
    done = subprocess.run(
        [sys.executable, str(script), "--quick", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=170,
    )
    assert done.returncode == 0, f"benchmark failed:\n{done.stdout}\n{done.stderr}"
    assert asyncio.run(_bench_schemas(dsn)) <= before  # its own schemas are dropped
    return done.stdout


@pytest.mark.timeout(180)
def test_latency_run_follows_every_system_without_a_lost_event(postgres_dsn: str) -> None:
    out = _run(LATENCY, postgres_dsn)
    rows = re.findall(
        rf"^\| ([\w-]+) \| (\d+) \| {NUMBER} \| {NUMBER} \| {NUMBER} \| {NUMBER} \| \d+ "
        r"\| (\d+) \| (\d+) \|$",
        out,
        re.M,
    )
    assert {row[0] for row in rows} == {"ours", "ours-poll", "sdk"}
    for _, chunks, lost, duplicated in rows:
        assert (int(chunks), lost, duplicated) == (20, "0", "0")  # 2 tasks of 10 chunks
    assert re.search(r"^latency SDK/ours, p50: [\d.]+x$", out, re.M)
    assert re.search(r"^target: ours p50 [\d.]+ ms \(goal <= 5 ms\): (met|MISSED)$", out, re.M)
    assert re.search(r"^broken streams or requests: 0$", out, re.M)


@pytest.mark.timeout(180)
def test_send_run_measures_one_and_two_workers_beside_sqlite_and_the_sdk(
    postgres_dsn: str,
) -> None:
    out = _run(SEND, postgres_dsn, "--duration", "0.5", "--warmup", "0.2")
    rows = dict(re.findall(rf"^\| ([\w-]+) \| ({NUMBER}) \| {NUMBER} \| {NUMBER} \|", out, re.M))
    servers = {"ours-sqlite", "ours-postgresql", "ours-postgresql-x2", "sdk", "sdk-postgresql"}
    assert set(rows) == servers
    assert all(float(rate.replace(",", "")) > 0 for rate in rows.values())
    assert re.search(r"^\| ours-postgresql-x2 / ours-postgresql \| [\d.]+x \|", out, re.M)
    assert re.search(r"^\| ours-postgresql / sdk-postgresql \| [\d.]+x \|", out, re.M)
    assert re.search(r"^errors: 0$", out, re.M)
