"""docs/observability.md has a table row for every attribute and metric the code records."""

from __future__ import annotations

import re
from pathlib import Path

from a2a_wire.telemetry import _metrics, _names

DOC = Path(__file__).parents[2] / "docs" / "observability.md"


def _rows() -> set[str]:
    """The names in the first column of the doc's tables."""
    names: set[str] = set()
    for line in DOC.read_text().splitlines():
        if line.startswith("| `"):
            names.update(re.findall(r"`([^`]+)`", line.split("|")[1]))
    return names


def _constants(module: object, prefixes: tuple[str, ...]) -> set[str]:
    return {
        value
        for name, value in vars(module).items()
        if name.isupper() and isinstance(value, str) and value.startswith(prefixes)
    }


def test_every_attribute_has_a_row() -> None:
    attributes = _constants(_names, ("a2a.", "gen_ai.", "error.", "server."))
    assert len(attributes) >= 12
    assert attributes - _rows() == set()


def test_every_metric_has_a_row() -> None:
    metrics = _constants(_metrics, ("a2a.",))
    assert len(metrics) == 12
    assert metrics - _rows() == set()
