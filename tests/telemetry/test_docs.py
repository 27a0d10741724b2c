"""docs/observability.md has a table row for every attribute the code records, and its metrics
table lists exactly the instruments of ``a2a_wire.telemetry._metrics.METRICS``, each with its
instrument kind, unit and attributes as the code declares them."""

from __future__ import annotations

import re
from pathlib import Path

from a2a_wire.server._store_timing import OPERATIONS
from a2a_wire.telemetry import _metrics, _names

DOC = Path(__file__).parents[2] / "docs" / "observability.md"


def _rows() -> set[str]:
    """The names in the first column of the doc's tables."""
    names: set[str] = set()
    for line in DOC.read_text().splitlines():
        if line.startswith("| `"):
            names.update(re.findall(r"`([^`]+)`", line.split("|")[1]))
    return names


def _metric_rows() -> dict[str, tuple[str, str, set[str]]]:
    """The metrics table: name to (instrument, unit, attributes named in backquotes)."""
    text = DOC.read_text().split("## Metrics", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, tuple[str, str, set[str]]] = {}
    for line in text.splitlines():
        if line.startswith("| `a2a."):
            cells = [cell.strip() for cell in line.strip("|").split("|")]
            name, kind, unit, attributes = cells[0].strip("`"), cells[1], cells[2], cells[3]
            rows[name] = (kind, unit.strip("`"), set(re.findall(r"`([^`]+)`", attributes)))
    return rows


def test_every_attribute_has_a_row() -> None:
    attributes = {
        value
        for name, value in vars(_names).items()
        if name.isupper()
        and isinstance(value, str)
        and value.startswith(("a2a.", "gen_ai.", "error.", "server."))
    }
    assert len(attributes) >= 14
    assert attributes - _rows() == set()


def test_the_metrics_table_is_the_code_s() -> None:
    declared = {m.name: (m.kind, m.unit, set(m.attributes)) for m in _metrics.METRICS}
    assert len(declared) == 17
    assert _metric_rows() == declared


def test_every_store_operation_is_documented() -> None:
    text = DOC.read_text()
    assert all(f"`{name}`" in text for name in OPERATIONS)
