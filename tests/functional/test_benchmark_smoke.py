"""Smoke run of benchmarks/codec.py: it must finish quickly, succeed and print its tables."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCHMARK = ROOT / "benchmarks" / "codec.py"

ROW = re.compile(
    r"^(?P<workload>small|typical|large)\s+[\d.]+ K?B\s+(?P<op>decode|encode)"
    r"\s+(?P<ours>[\d.]+)\s+(?P<ref>[\d.]+)\s+(?P<ratio>[\d.]+)x$"
)
MEMORY = re.compile(r"^\s*ours ([\d,]+) B\s+json_format/upb ([\d,]+) B\s+ratio ([\d.]+)x$")


@pytest.fixture(scope="module")
def output() -> str:
    done = subprocess.run(
        [sys.executable, str(BENCHMARK), "--quick"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=20,
    )
    assert done.returncode == 0, f"benchmark failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.mark.timeout(30)
def test_prints_machine_and_reference_description(output: str) -> None:
    assert re.search(r"^date:\s+\d{4}-\d\d-\d\d ", output, re.M)
    assert re.search(r"^machine:\s+\S+.*\d+ CPUs$", output, re.M)
    assert re.search(r"^python:\s+\S+ 3\.\d+", output, re.M)
    assert "json_format.ParseDict" in output
    assert "json_format.MessageToDict" in output


@pytest.mark.timeout(30)
def test_prints_ratio_table_for_every_workload_and_op(output: str) -> None:
    header = [line for line in output.splitlines() if line.startswith("workload")]
    assert len(header) == 1
    assert "ours µs" in header[0] and "json_format µs" in header[0] and "ratio" in header[0]
    rows = [m for line in output.splitlines() if (m := ROW.match(line))]
    assert {(m["workload"], m["op"]) for m in rows} == {
        (w, op) for w in ("small", "typical", "large") for op in ("decode", "encode")
    }
    assert len(rows) == 6
    for m in rows:
        ours, ref, ratio = float(m["ours"]), float(m["ref"]), float(m["ratio"])
        assert ours > 0 and ref > 0
        # The printed times are rounded to 0.1 µs and the ratio to 0.1: allow for both.
        low, high = (ref - 0.05) / (ours + 0.05), (ref + 0.05) / (ours - 0.05)
        assert low - 0.05 <= ratio <= high + 0.05, m.group(0)


@pytest.mark.timeout(30)
def test_prints_memory_comparison(output: str) -> None:
    matches = [m for line in output.splitlines() if (m := MEMORY.match(line))]
    assert len(matches) == 1
    ours, ref = (int(g.replace(",", "")) for g in matches[0].groups()[:2])
    assert ours > 1_000 and ref > 1_000, "a decoded 12 KB Task cannot take under 1 KB"
