"""Smoke run of benchmarks/store_log.py: it must finish quickly, succeed and print its tables."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
BENCHMARK = ROOT / "benchmarks" / "store_log.py"
STORES = ("log memory", "log sqlite", "reference memory", "reference sqlite")
ROW = re.compile(r"^(?P<store>[a-z ]+?)\s+(?P<n>\d+)\s+(?P<cpu>[\d.]+)\s+(?P<bytes>[\d,]+|-)\s")


@pytest.mark.timeout(60)
def test_quick_run_prints_every_store_and_the_ratios(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(BENCHMARK), "--quick", "--dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=50,
    )
    assert done.returncode == 0, f"benchmark failed:\n{done.stdout}\n{done.stderr}"
    rows = [m for line in done.stdout.splitlines() if (m := ROW.match(line))]
    assert {(m["store"], int(m["n"])) for m in rows} == {(s, n) for s in STORES for n in (20, 200)}
    for m in rows:
        assert float(m["cpu"]) > 0
        assert (m["bytes"] == "-") == ("memory" in m["store"])
    ratios = re.findall(
        r"^  (log memory|log sqlite|reference memory|reference sqlite)\s+CPU", done.stdout, re.M
    )
    assert sorted(ratios) == sorted(STORES)
    assert list(tmp_path.iterdir()) == []  # the databases are removed
