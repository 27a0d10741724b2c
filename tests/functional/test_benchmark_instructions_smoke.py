"""Smoke run of benchmarks/server_instructions.py with ``--tool cpu`` (no valgrind needed).

Every answer of the load is checked by the load generator; this only checks that the run ends
cleanly with one row per cell. No figure is checked.
"""

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
BENCHMARK = ROOT / "benchmarks" / "server_instructions.py"
ROW = re.compile(r"^\| (?P<server>ours-\w+) \| (?P<kind>\w+) \| [\d,]+ \|$")


@pytest.mark.timeout(180)
def test_one_row_per_cell() -> None:
    cmd = [sys.executable, str(BENCHMARK), "--tool", "cpu", "--requests", "30", "--warmup", "5"]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=170)
    assert done.returncode == 0, f"benchmark failed:\n{done.stdout}\n{done.stderr}"
    cells = {
        (m["server"], m["kind"]) for line in done.stdout.splitlines() if (m := ROW.match(line))
    }
    servers, kinds = {"ours-sqlite", "ours-memory"}, {"SendMessage", "SendStreamingMessage"}
    assert cells == {(s, k) for s in servers for k in kinds}, done.stdout
