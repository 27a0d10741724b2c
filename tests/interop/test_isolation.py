"""The a2a-sdk stays out of the pytest process (it would clash with the codec oracle's proto)."""

from __future__ import annotations

import re
import sys

from interop_support import HERE

SDK_IMPORT = re.compile(r"^(?:from a2a[. ]|import a2a\b)", re.MULTILINE)


def test_the_sdk_is_not_imported_here() -> None:
    loaded = sorted(name for name in sys.modules if name == "a2a" or name.startswith("a2a."))
    assert loaded == []


def test_only_the_scenario_scripts_import_the_sdk() -> None:
    importing = sorted(
        path.name
        for path in HERE.glob("*.py")
        if SDK_IMPORT.search(path.read_text(encoding="utf-8"))
    )
    assert importing == [
        "run_sdk_client.py",
        "run_sdk_client_turns.py",
        "run_sdk_reading.py",
        "run_sdk_server.py",
        "run_sdk_turns.py",
    ]
