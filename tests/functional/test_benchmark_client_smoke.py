"""Smoke run of benchmarks/client.py: it finishes error-free and prints its table and targets.

The figures themselves are not checked (a short run on a shared machine is noise); a full run
and its results are in docs/performance.md.
"""

import re
import subprocess
import sys
from pathlib import Path

import pytest

# Pinned processes and busy loops: in the "heavy" group, so that the database-fault suites,
# which bound how long requests are held, never run beside it (tests/conftest.py).
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("heavy")]

ROOT = Path(__file__).resolve().parents[2]
BENCHMARK = ROOT / "benchmarks" / "client.py"
SIDES = ("a2a-wire", "raw-aiohttp", "a2a-sdk")
CELLS = ("SendMessage c=1", "SendMessage c=16", "stream")
NUMBER = r"[\d,]+\.\d"
ROW = re.compile(
    rf"^\| (?P<cell>[^,]+), CPU µs per (?:call|event) \| (?P<costs>{NUMBER}(?: \| {NUMBER}){{2}})"
    r" \| (?P<wire>[\d.]+)x \| (?P<sdk>[\d.]+)x \|$"
)
TARGET = re.compile(
    r"^  (?P<cell>[^:]+): (?P<ratio>[\d.]+)x \(goal <= (?P<goal>[\d.]+)x\): (?P<verdict>met|MISSED)$"
)


@pytest.fixture(scope="module")
def output() -> str:
    cmd = [sys.executable, str(BENCHMARK), "--quick"]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=100)
    assert done.returncode == 0, f"benchmark failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.mark.timeout(120)
def test_measures_every_client_in_every_cell_without_errors(output: str) -> None:
    header = next(line for line in output.splitlines() if line.startswith("| cell |"))
    assert [name.strip() for name in header.split("|")[2:5]] == list(SIDES)
    rows = {m["cell"]: m for line in output.splitlines() if (m := ROW.match(line))}
    assert set(rows) == set(CELLS), output
    for row in rows.values():
        costs = [float(c.replace(",", "")) for c in row["costs"].split(" | ")]
        assert all(cost > 0 for cost in costs), row.group(0)
    for side in SIDES:
        assert re.search(rf"^client:\s+{side} from /\S+$", output, re.M), side
    assert re.search(r"^pinning:\s+", output, re.M)
    assert re.search(r"^errors: 0$", output, re.M)


@pytest.mark.timeout(120)
def test_prints_each_target_with_its_verdict(output: str) -> None:
    targets = {m["cell"]: m for line in output.splitlines() if (m := TARGET.match(line))}
    assert set(targets) == set(CELLS), output
    assert {cell: float(m["goal"]) for cell, m in targets.items()} == {
        "SendMessage c=1": 1.3,
        "SendMessage c=16": 1.3,
        "stream": 2.0,
    }
    for m in targets.values():
        met = float(m["ratio"]) <= float(m["goal"])
        assert m["verdict"] == ("met" if met else "MISSED"), m.group(0)
