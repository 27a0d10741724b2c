"""Smoke run of benchmarks/scale_tasks.py on SQLite and PostgreSQL: it finishes, error-free.

The quick mode loads a few thousand tasks in each store (a ``bench_`` schema on the test
server, ``postgres_dsn``) and prints every figure with its target; the figures are not checked
(a short run on a shared machine is noise; the full run is in docs/performance.md). The run
leaves no schema behind.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from test_benchmark_scale_smoke import NUMBER, _bench_schemas

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("bench-schemas")]

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "scale_tasks.py"
FIGURES = (
    "GetTask p99",
    "ListTasks of one context p99",
    "live delivery behind 2,000 dead rows in 1 lane(s), p50",
    "live delivery behind 2,000 dead rows in 20 lane(s), p50",
)


@pytest.mark.timeout(600)
def test_the_quick_run_measures_every_target_on_both_stores(postgres_dsn: str) -> None:
    before = asyncio.run(_bench_schemas(postgres_dsn))
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick"],
        cwd=ROOT,
        env={**os.environ, "A2A_WIRE_BENCH_DSN": postgres_dsn},
        capture_output=True,
        text=True,
        timeout=570,
    )
    assert done.returncode == 0, f"benchmark failed:\n{done.stdout}\n{done.stderr}"
    assert asyncio.run(_bench_schemas(postgres_dsn)) <= before  # its own schemas are dropped
    out = done.stdout
    for store in ("sqlite", "postgresql"):
        assert re.search(rf"^### {store}: 400 against 2,000 tasks$", out, re.M)
        assert re.search(rf"^{store} errors: 0$", out, re.M)
    for figure in FIGURES:
        row = rf"^\| {re.escape(figure)} \| {NUMBER} ms \| {NUMBER} ms \| {NUMBER}x \| <= 1.5x \| (met|MISSED) \|$"
        assert len(re.findall(row, out, re.M)) == 2, figure  # one row per store
    assert re.search(r"^\| server CPU per SendMessage \| ", out, re.M)
    assert re.search(r"^\| server CPU per SendMessage \(\+ database\) \| ", out, re.M)
    holds = re.findall(
        rf"^\| longest store hold during retention \(\w+\) \| \| {NUMBER} ms \|", out, re.M
    )
    assert len(holds) == 2
    assert re.search(r"^retention: 300 tasks deleted, ", out, re.M)
    assert re.search(r"^errors: 0$", out, re.M)
