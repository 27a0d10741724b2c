"""Interop tests: the session-wide table of cell outcomes that becomes docs/interop.md."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from interop_support import ROOT
from interop_table import InteropTable

DOC = ROOT / "docs" / "interop.md"


@pytest.fixture(scope="session")
def interop_table() -> Iterator[InteropTable]:
    """Collects outcomes; writes docs/interop.md at the end of a session that filled every cell."""
    table = InteropTable()
    yield table
    table.write_if_complete(DOC)
