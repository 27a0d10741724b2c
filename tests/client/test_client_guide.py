"""docs/client.md runs: each of its complete examples against ``a2a-wire serve`` on 127.0.0.1.

A complete example is a ``python`` code block that calls ``asyncio.run``; it is run as a
script in a fresh interpreter, with the guide's URL (``http://127.0.0.1:8765``) replaced by the
test server's, and must exit 0 (the examples assert what they show). Blocks that are fragments
are not run.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from e2e_support import PYTHON, ServerProcess, environment, free_port

pytestmark = pytest.mark.timeout(300)

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "client.md"
GUIDE_URL = "http://127.0.0.1:8765"


def examples() -> list[tuple[str, str]]:
    """``(section heading, code)`` of every complete example, in page order."""
    found, section = [], ""
    for part in re.split(r"^(```python\n.*?^```)$", GUIDE.read_text("utf-8"), flags=re.M | re.S):
        if part.startswith("```python\n"):
            code = part.removeprefix("```python\n").removesuffix("```")
            if "asyncio.run(" in code:
                found.append((section, code))
        else:
            headings = re.findall(r"^## (.+)$", part, flags=re.M)
            section = headings[-1] if headings else section
    return found


TOPICS = {
    "Connect",
    "Loopback and `allow`",
    "Send",
    "Stream",
    "Wait",
    "Paging",
    "Closing streams",
    "Limits and timeouts",
}


def test_the_guide_has_an_example_for_each_of_its_topics() -> None:
    found = examples()
    assert TOPICS <= {section for section, _ in found}
    # These talk to the server the test starts (other sections may bring their own).
    assert all(GUIDE_URL in code for section, code in found if section in TOPICS)


def test_the_guide_examples_run(tmp_path: Path) -> None:
    port = free_port()
    args = ["--port", str(port), "--data-dir", str(tmp_path / "data")]
    with ServerProcess(args, tmp_path / "server.log", port) as server:
        for section, code in examples():
            script = tmp_path / "example.py"
            script.write_text(code.replace(GUIDE_URL, server.url), encoding="utf-8")
            run = subprocess.run(
                [PYTHON, str(script)],
                capture_output=True,
                text=True,
                timeout=120,
                env=environment(),
                stdin=subprocess.DEVNULL,
                cwd=tmp_path,
            )
            assert run.returncode == 0, (section, run.stdout, run.stderr)
            assert run.stdout.strip(), section  # every example shows something
