"""Smoke runs of benchmarks/server.py and benchmarks/memory.py: they finish, error-free, with tables.

The figures themselves are not checked (a short run on a shared machine is noise); the full
runs and their results are in docs/performance.md.
"""

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SERVER = ROOT / "benchmarks" / "server.py"
MEMORY = ROOT / "benchmarks" / "memory.py"
SERVERS = ("ours-sqlite", "ours-memory", "sdk", "ceiling")
WORKLOADS = ("SendMessage", "SendStreamingMessage")
ROW = re.compile(r"^\| (?P<server>[\w-]+) \| (?P<workload>\w+) \| 16 \| (?P<rps>[\d,]+) \|")


@pytest.fixture(scope="module")
def server_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, list[dict[str, Any]]]:
    raw = tmp_path_factory.mktemp("bench") / "server.json"
    cmd = [sys.executable, str(SERVER), "--quick", "--no-codec", "--json", str(raw)]
    cmd += ["--duration", "0.5", "--warmup", "0.2"]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=40)
    assert done.returncode == 0, f"benchmark failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout, json.loads(raw.read_text())


@pytest.mark.timeout(45)
def test_every_server_answers_both_workloads_without_errors(
    server_run: tuple[str, list[dict[str, Any]]],
) -> None:
    output, rows = server_run
    cells = {(row["server"], row["workload"]): row for row in rows}
    assert set(cells) == {(s, w) for s in SERVERS for w in WORKLOADS}
    for row in rows:
        assert row["concurrency"] == 16
        assert row["errors"] == 0, row
        assert row["requests"] > 0 and row["rps"] > 0, row
        assert 0 < row["p50_ms"] <= row["p99_ms"], row
    assert re.search(r"^errors: 0$", output, re.M)


@pytest.mark.timeout(45)
def test_prints_the_table_the_ratios_and_the_targets(
    server_run: tuple[str, list[dict[str, Any]]],
) -> None:
    output, _ = server_run
    assert re.search(r"^machine:\s+\S+.*\d+ CPUs$", output, re.M)
    assert re.search(r"^pinning:\s+", output, re.M)
    printed = {
        (m["server"], m["workload"]) for line in output.splitlines() if (m := ROW.match(line))
    }
    assert printed == {(s, w) for s in SERVERS for w in WORKLOADS}
    assert re.search(r"^\| SendMessage \| 16 \| [\d.]+x \| [\d.]+x \|", output, re.M)
    assert (
        len(re.findall(r"^  .+: [\d.]+x \(goal >= [\d.]+x\).*: (met|MISSED)$", output, re.M)) == 3
    )


@pytest.mark.timeout(45)
def test_memory_run_creates_every_task_and_reports_rss_and_disk() -> None:
    cmd = [sys.executable, str(MEMORY), "--tasks", "2000"]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=40)
    assert done.returncode == 0, f"memory benchmark failed:\n{done.stdout}\n{done.stderr}"
    out = done.stdout
    assert "tasks stored: 2,000 (expected 2,000)" in out
    assert re.search(r"^errors: 0$", out, re.M)
    steps = re.findall(r"^\s+([\d,]+)\s+([\d.]+)\s+([\d.]+)\s+[\d,]+$", out, re.M)
    assert len(steps) == 20
    assert steps[-1][0] == "2,000"
    assert all(float(rss) > 1 for _, rss, _ in steps)
    assert re.search(r"^on disk: [\d.]+ MB, [\d,]+ bytes per task$", out, re.M)


@pytest.mark.timeout(45)
def test_before_runs_an_earlier_checkouts_servers_beside_ours() -> None:
    """``--before CHECKOUT``: here the project's own checkout stands in for the earlier one."""
    cmd = [sys.executable, str(SERVER), "--quick", "--no-codec", "--duration", "0.3"]
    cmd += ["--warmup", "0.1", "--servers", "ours-memory,before-memory,sdk,ceiling"]
    cmd += ["--before", str(ROOT), "--before-python", sys.executable]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=40)
    assert done.returncode == 0, f"benchmark failed:\n{done.stdout}\n{done.stderr}"
    out = done.stdout
    assert re.search(r"^\| before-memory \| SendMessage \| 16 \| [\d,]+ \|", out, re.M)
    assert f"against the earlier checkout {ROOT}" in out
    rows = re.findall(
        r"^\| \w+ \| memory/(SDK|ceiling) \| [\d.]+x \| [\d.]+x \| [\d.]+x \| (yes|NO) \|$",
        out,
        re.M,
    )
    assert len(rows) == 4  # SendMessage and SendStreamingMessage, each to the SDK and the ceiling


def test_before_needs_a_checkout_with_the_benchmark_servers(tmp_path: Path) -> None:
    cmd = [sys.executable, str(SERVER), "--quick", "--before", str(tmp_path)]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=40)
    assert done.returncode == 2 and "no benchmarks/_servers.py there" in done.stderr
    cmd = [sys.executable, str(SERVER), "--quick", "--servers", "before-sqlite"]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=40)
    assert done.returncode == 2 and "need --before CHECKOUT" in done.stderr
