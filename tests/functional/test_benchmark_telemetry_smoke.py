"""Smoke run of benchmarks/telemetry.py: every way starts (the "not installed" server really
without opentelemetry, the OTLP one exporting to the loopback collector), every answer is
checked, and the report ends with the verdict on the 2 % target. No figure is checked."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

# Pinned processes and busy loops: in the "heavy" group, so that the database-fault suites,
# which bound how long requests are held, never run beside it (tests/conftest.py).
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("heavy")]

ROOT = Path(__file__).resolve().parents[2]
BENCHMARK = ROOT / "benchmarks" / "telemetry.py"
WAYS = ("not installed", "off", "on", "on, OTLP")


@pytest.mark.timeout(240)
def test_a_short_run_measures_every_way_and_gives_the_verdict() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCHMARK), "--rounds", "1", "--seconds", "0.3"],
        cwd=ROOT / "benchmarks",
        capture_output=True,
        text=True,
        timeout=220,
    )
    assert done.returncode == 0, f"benchmark failed:\n{done.stdout}\n{done.stderr}"
    out = done.stdout
    for way in WAYS:
        assert re.search(rf"^{re.escape(way)}\s+SendMessage\s+\d+", out, re.M), out
    verdicts = re.findall(r"off/not installed (\d\.\d{3}): (met|missed)", out)
    assert len(verdicts) == 2, out
    assert re.search(r"on, OTLP/off .* us server CPU", out), out
