"""Every setting is in ``examples/serve.toml`` (with its default) and in ``docs/server.md``.

The fields are read from the classes themselves, so a field added to ``ServerSettings``,
``PushSettings`` or a section of the ``serve`` configuration fails here until both files name it.
``tests/cli/test_cli_examples.py::test_serve_example_holds_the_defaults`` checks that the values
the example gives are the defaults. ``docs/scale-out.md`` names every limit too, saying whether it
is shared by the processes of one database or kept per process.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import pytest

from a2a_wire.cli.config._lines import key_lines
from a2a_wire.cli.config._load import SkillEntry
from a2a_wire.cli.config._parts import AgentEntry, SecuritySection
from a2a_wire.cli.config._schema import SERVER_FIELDS, CardSection, ExtensionEntry, ServerSection
from a2a_wire.cli.config._storage import PostgresSection
from a2a_wire.cli.config._telemetry import TelemetrySection
from a2a_wire.server import ServerSettings, TokenIssuer, TokenSettings
from a2a_wire.server.push import PushSettings

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = (ROOT / "examples" / "serve.toml").read_text(encoding="utf-8")
DOC = (ROOT / "docs" / "server.md").read_text(encoding="utf-8")
SCALE_OUT = (ROOT / "docs" / "scale-out.md").read_text(encoding="utf-8")
KEYS = set(key_lines(EXAMPLE))
COMMENTED = set(re.findall(r"^# (\w+) = ", EXAMPLE, flags=re.MULTILINE))

PYTHON_ONLY = {(PushSettings, "resolver"), (TokenSettings, "clock")}
"""Fields no TOML value can hold; docs/server.md still names them."""
FROM_ENVIRONMENT = {(TelemetrySection, "enabled")}
"""Keys whose default depends on the environment: the example names them commented out."""


def _key(cls: type[Any], name: str) -> tuple[Any, ...] | None:
    """Where a settings field is set in the configuration (``None``: not a key)."""
    if cls is ServerSettings:
        if name == "push":  # the [push] table, checked field by field
            return None
        return ("server" if name in SERVER_FIELDS else "limits", name)
    if cls is PushSettings:
        return ("push", "allow" if name == "allowlist" else name)
    if cls is PostgresSection:
        return ("postgresql", name)
    if cls is TelemetrySection:
        return ("telemetry", name)
    if cls is TokenSettings:
        return ("security", "tokens", "allow" if name == "allowlist" else name)
    return ("server", name)


SETTINGS = [
    (cls, spec.name)
    for cls in (
        ServerSettings,
        PushSettings,
        ServerSection,
        PostgresSection,
        TelemetrySection,
        TokenSettings,
    )
    for spec in dataclasses.fields(cls)
    if (cls, spec.name) not in PYTHON_ONLY and _key(cls, spec.name) is not None
]

RENAMED = {
    "provider_organization": "provider",  # provider = { organization, url }
    "provider_url": "provider",
    "executor_ref": "executor",
    "signer": "signing_keys",  # [[security.signing_keys]]
}
BUILT = {(SkillEntry, "executor")}
"""Fields the configuration builds from other keys (the executor from ``executor`` and ``options``)."""
SECTIONS = [
    (cls, RENAMED.get(spec.name, spec.name))
    for cls in (CardSection, ExtensionEntry, SkillEntry, AgentEntry, SecuritySection, TokenIssuer)
    for spec in dataclasses.fields(cls)
    if (cls, spec.name) not in BUILT
]


TABLES = set(re.findall(r"^#? ?\[\[?([\w.]+)\]\]?", EXAMPLE, flags=re.MULTILINE))
"""Every table of the example, set or commented out (``card.extensions``, ``skills``, ...)."""


def _names() -> set[str]:
    """Every key the example names, set or commented out, and the last part of each table."""
    names = {str(path[-1]) for path in KEYS if isinstance(path[-1], str)}
    return names | COMMENTED | {table.rsplit(".", 1)[-1] for table in TABLES}


def _documented(name: str) -> bool:
    """``name`` in backticks, or a table of that name (``[name]``, ``[[x.name]]``) in the page."""
    tables = {table for table in TABLES if table.rsplit(".", 1)[-1] == name}
    return f"`{name}`" in DOC or any(f"[{table}]" in DOC for table in tables)


@pytest.mark.parametrize(("cls", "name"), SETTINGS, ids=lambda v: getattr(v, "__name__", v))
def test_every_settings_field_is_a_key_of_the_example(cls: type[Any], name: str) -> None:
    key = _key(cls, name)
    if (cls, name) in FROM_ENVIRONMENT:
        assert name in COMMENTED, f"{cls.__name__}.{name}: examples/serve.toml has no # {name} ="
        return
    assert key in KEYS, f"{cls.__name__}.{name}: examples/serve.toml has no {'.'.join(key or ())}"


@pytest.mark.parametrize(("cls", "name"), SECTIONS, ids=lambda v: getattr(v, "__name__", v))
def test_every_field_of_the_other_sections_is_in_the_example(cls: type[Any], name: str) -> None:
    assert name in _names(), f"{cls.__name__}: examples/serve.toml names no {name!r}"


def test_the_server_page_documents_every_key_of_the_example() -> None:
    assert sorted(name for name in _names() if not _documented(name)) == []


def test_the_server_page_documents_every_settings_field() -> None:
    keys = {str(_key(cls, name)[-1]) for cls, name in SETTINGS}  # type: ignore[index]
    names = keys | {name for _, name in PYTHON_ONLY} | {name for _, name in SECTIONS}
    assert sorted(name for name in names if not _documented(name)) == []


def test_the_history_trim_rule_is_documented() -> None:
    rule = DOC.split("**History.**", 1)[1].split("\n\n", 1)[0]
    assert "`max_history_per_task`" in rule and "first" in rule and "silent" in rule


def test_the_scale_out_page_says_where_each_limit_is_kept() -> None:
    """docs/scale-out.md classifies every limit as shared or per process; none is forgotten."""
    table = SCALE_OUT.split("**Every limit**", 1)[1].split("\n\n")[1]  # the table after it
    names = [f"`{spec.name}`" for spec in dataclasses.fields(ServerSettings) if spec.name != "push"]
    names += [f"`push.{spec.name}`" for spec in dataclasses.fields(PushSettings)]
    assert [name for name in names if name not in table] == []
