"""Smoke run of benchmarks/auth.py: it finishes, checks every answer, and counts scrypt runs.

No figure is checked except the scrypt counts of the new code, which do not depend on timing:
single-flight and the remembered tags make each distinct token cost its runs exactly once.
"""

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
BENCHMARK = ROOT / "benchmarks" / "auth.py"
ROW = re.compile(
    r"^(?P<scenario>one token|every token)\s+(?P<way>key ids|no key ids|before)\s+"
    r"(?P<requests>\d+)\s+(?P<runs>[\d,]+)\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+[\d.]+$"
)


@pytest.mark.timeout(240)
def test_quick_run_counts_one_run_per_token_with_key_ids() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCHMARK), "--quick"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=220,
    )
    assert done.returncode == 0, f"benchmark failed:\n{done.stdout}\n{done.stderr}"
    rows = {
        (m["scenario"], m["way"]): (int(m["requests"]), int(m["runs"].replace(",", "")))
        for line in done.stdout.splitlines()
        if (m := ROW.match(line))
    }
    clients = 5  # --quick
    assert rows[("one token", "key ids")] == (60, 1)
    assert rows[("every token", "key ids")] == (60, clients)
    assert rows[("one token", "no key ids")] == (60, clients)
    assert rows[("every token", "no key ids")] == (60, clients * clients)
    assert {way for _, way in rows} == {"key ids", "no key ids", "before"}
    assert "target: p99 under 1 s" in done.stdout
