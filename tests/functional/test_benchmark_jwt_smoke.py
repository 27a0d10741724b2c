"""benchmarks/jwt_auth.py runs (a few requests) and shows that requests fetch no keys.

Only the outcome is checked, not the CPU figures; the full run is in docs/performance.md.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def test_the_jwt_benchmark_runs_and_fetches_keys_only_while_warming_up() -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "jwt_auth.py"),
            "--requests",
            "20",
            "--rounds",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    rows = [
        line
        for line in done.stdout.splitlines()
        if line.startswith(("| authenticate", "| request"))
    ]
    assert len(rows) == 5
    assert "0 during the measured requests" in done.stdout
