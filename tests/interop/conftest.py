"""Interop tests: the session-wide table of cell outcomes that docs/interop.md shows.

``test_table.py`` is moved to the end of the session so that it sees every cell the other
interop tests recorded, and ``whole_interop_run`` tells it whether the session selected them all.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from interop_support import HERE
from interop_table import InteropTable

TABLE_TEST = "test_table.py"
PARTIAL = pytest.StashKey[bool]()


@pytest.fixture(scope="session")
def interop_table() -> InteropTable:
    """Collects the outcomes the interop tests record during the session."""
    return InteropTable()


@pytest.fixture
def whole_interop_run(request: pytest.FixtureRequest) -> bool:
    """Whether this session selected every test of tests/interop (so every cell should be filled)."""
    return not request.config.stash.get(PARTIAL, True)


def _covers_the_folder(arg: str) -> bool:
    path = Path(arg.split("::")[0]).resolve()
    return "::" not in arg and (path == HERE or path in HERE.parents)


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Run the table test last; note whether the arguments selected only part of tests/interop.

    With ``-n``, every interop test runs on one worker (``xdist_group("interop")``): the table
    is that process's, and its test must come after all the others.
    """
    config.stash[PARTIAL] = not any(_covers_the_folder(arg) for arg in config.args)
    for item in items:
        if HERE in item.path.parents:
            item.add_marker(pytest.mark.xdist_group("interop"))
    last = [item for item in items if item.path == HERE / TABLE_TEST]
    items[:] = [item for item in items if item not in last] + last


def pytest_deselected(items: list[pytest.Item]) -> None:
    """An interop test deselected (``-k``, ``-m``, ``--deselect``) leaves its cells empty."""
    for item in items:
        if HERE in item.path.parents:
            item.config.stash[PARTIAL] = True
