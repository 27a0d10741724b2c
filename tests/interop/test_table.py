"""docs/interop.md is what the interop tests find (the drift check of ``make interop-table``).

This test runs after every other interop test (see ``conftest.py``). It renders the table of
outcomes they recorded and compares it with the committed file; with ``--write-interop-table``
(what ``make interop-table`` passes) it writes the file instead. A test run never writes it.
"""

from __future__ import annotations

import pytest
from interop_support import ROOT
from interop_table import InteropTable

DOC = ROOT / "docs" / "interop.md"


def test_docs_interop_md_matches_the_recorded_outcomes(
    interop_table: InteropTable, whole_interop_run: bool, request: pytest.FixtureRequest
) -> None:
    missing = interop_table.missing()
    if missing and (request.session.testsfailed or not whole_interop_run):
        pytest.skip(f"{len(missing)} interop cells not recorded: the session ran part of them")
    assert missing == [], "every interop test ran and passed, yet these cells were never recorded"
    text = interop_table.render()
    if request.config.getoption("write_interop_table"):
        DOC.write_text(text, encoding="utf-8")
        return
    assert DOC.read_text(encoding="utf-8") == text, (
        "docs/interop.md differs from the outcomes the interop tests recorded; "
        "run `make interop-table` and commit the file"
    )
