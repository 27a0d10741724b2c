"""Smoke run of benchmarks/server_threads.py: one small cell ends cleanly with its row.

Every answer of the load is checked by the load generator; no figure is checked.
"""

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
BENCHMARK = ROOT / "benchmarks" / "server_threads.py"
ROW = re.compile(r"^\| 1 \| ours-sqlite \| SendMessage \| (?:[\d,]+\.\d \| ){3}[\d,]+\.\d \|$")


@pytest.mark.timeout(120)
def test_one_row_for_one_cell() -> None:
    cmd = [sys.executable, str(BENCHMARK), "--kinds", "send", "--requests", "30"]
    cmd += ["--warmup", "5", "--rounds", "1"]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=110)
    assert done.returncode == 0, f"benchmark failed:\n{done.stdout}\n{done.stderr}"
    rows = [line for line in done.stdout.splitlines() if ROW.match(line)]
    assert len(rows) == 1, done.stdout
