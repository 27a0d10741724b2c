"""Smoke run of benchmarks/stream_resume.py: a subscriber that drops every 100 events and comes
back with ``Last-Event-ID`` gets every event exactly once, in order, on both our stores.

Only the outcome is checked, not the resume times; the full run is in docs/performance.md.
"""

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
BENCHMARK = ROOT / "benchmarks" / "stream_resume.py"
ROW = re.compile(
    r"^\| (?P<store>ours-\w+) \| (?P<events>[\d,]+) \| (?P<last>[\d,]+) \| (?P<chunks>[\d,]+) \|"
)


@pytest.mark.timeout(120)
def test_every_event_arrives_once_in_order_across_resumes() -> None:
    cmd = [sys.executable, str(BENCHMARK), "--quick"]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=100)
    assert done.returncode == 0, f"benchmark failed:\n{done.stdout}\n{done.stderr}"
    rows = {m["store"]: m for line in done.stdout.splitlines() if (m := ROW.match(line))}
    assert set(rows) == {"ours-sqlite", "ours-memory"}, done.stdout
    for row in rows.values():
        assert row["events"] == row["last"], row.groupdict()  # ids 1..N, none twice, none lost
    assert re.search(r"^every event exactly once, in order: yes$", done.stdout, re.M)
