"""The ``a2a-wire serve`` configuration reader, and its server, limits, card and network parts.

:mod:`a2a_wire.cli.config._load` reads the file and builds executors; this module holds the typed reader
(:class:`Table`) that records every problem with its key path instead of stopping at the first,
and one ``read_*`` function per section. Each reader returns usable values even when it found
problems (defaults in their place), so that the whole file is checked in one pass.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yarl

from a2a_wire import __version__
from a2a_wire.cli.config._lines import KeyPath
from a2a_wire.netguard import AddressPolicy
from a2a_wire.server.store import BUSY_TIMEOUT_SECONDS

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
LOG_LEVELS = ("debug", "info", "warning", "error")
LOG_FORMATS = ("text", "json")
STORAGES = ("sqlite", "memory", "postgresql")
_NAME = r"[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}"  # RFC 6838 section 4.2
_TOKEN = r"[!#$%&'*+.^_`|~0-9A-Za-z-]+"  # RFC 9110 section 5.6.2
_PARAMETER = rf"[ \t]*;[ \t]*{_TOKEN}=(?:{_TOKEN}|\"(?:[^\"\\]|\\.)*\")"
_MEDIA_TYPE = re.compile(rf"(?:\*/\*|{_NAME}/(?:\*|{_NAME}))(?:{_PARAMETER})*\Z")
SERVER_FIELDS = (
    "rpc_path",
    "public_url",
    "keepalive_seconds",
    "shutdown_grace_seconds",
    "cors_origins",
)
"""ServerSettings fields set in ``[server]``; the others go in ``[limits]``."""


@dataclass(frozen=True, slots=True)
class ConfigIssue:
    """One problem: where it is and what is wrong."""

    line: int | None
    key: str
    message: str

    def render(self, source: str) -> str:
        """``source:line: key: message`` (parts that are unknown are left out)."""
        where = f"{source}:{self.line}" if self.line is not None else source
        return f"{where}: {self.key}: {self.message}" if self.key else f"{where}: {self.message}"


def dotted(path: KeyPath) -> str:
    """``("skills", 1, "id")`` as ``skills[1].id``."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


class Issues:
    """Collects problems, placing each at the line of its key."""

    def __init__(self, locate: Callable[[KeyPath], int | None]) -> None:
        self.locate = locate
        self.items: list[ConfigIssue] = []

    def add(self, path: KeyPath, message: str) -> None:
        """Record a problem at ``path``."""
        self.items.append(ConfigIssue(self.locate(path), dotted(path), message))


def _kind(value: object) -> str:
    names = {bool: "a boolean", int: "an integer", float: "a number", str: "a string"}
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "an array"
    return names.get(type(value), type(value).__name__)


class Table:
    """A TOML table being read: typed getters, each recording a problem instead of raising."""

    def __init__(self, data: Mapping[str, Any], path: KeyPath, issues: Issues) -> None:
        self.data = data
        self.path = path
        self.issues = issues
        self.used: set[str] = set()

    def problem(self, key: KeyPath, message: str) -> None:
        """Record a problem at ``key`` (relative to this table)."""
        self.issues.add((*self.path, *key), message)

    def _get(self, key: str, accept: Callable[[object], bool], want: str) -> Any:
        self.used.add(key)
        if key not in self.data:
            return None
        value = self.data[key]
        if not accept(value):
            self.problem((key,), f"must be {want}, not {_kind(value)}")
            return None
        return value

    def text(self, key: str, default: str = "") -> str:
        """A string."""
        value = self._get(key, lambda v: isinstance(v, str), "a string")
        return default if value is None else str(value)

    def flag(self, key: str, default: bool) -> bool:
        """A boolean."""
        value = self._get(key, lambda v: isinstance(v, bool), "a boolean")
        return default if value is None else bool(value)

    def integer(self, key: str, default: int, low: int, high: int | None = None) -> int:
        """An integer within ``low..high``."""
        value = self._get(key, lambda v: type(v) is int, "an integer")
        if value is None:
            return default
        if value < low or (high is not None and value > high):
            bound = f"{low}..{high}" if high is not None else f">= {low}"
            self.problem((key,), f"must be {bound}, not {value}")
            return default
        return int(value)

    def number(self, key: str, default: float, *, positive: bool = True) -> float:
        """A finite number (integer or float), positive unless ``positive`` is false (then >= 0).

        TOML's ``nan`` and ``inf`` are refused: every number of the configuration is a duration,
        a rate or a size, which must be finite.
        """
        value = self._get(key, lambda v: type(v) in (int, float), "a number")
        if value is None:
            return default
        if not math.isfinite(value):
            self.problem((key,), f"must be a finite number, not {value}")
            return default
        if value < 0 or (positive and value == 0):
            self.problem((key,), f"must be {'positive' if positive else '>= 0'}, not {value}")
            return default
        return float(value)

    def strings(self, key: str, default: tuple[str, ...] = ()) -> tuple[str, ...]:
        """An array of strings."""
        value = self._get(
            key,
            lambda v: isinstance(v, list) and all(isinstance(i, str) for i in v),
            "an array of strings",
        )
        return default if value is None else tuple(value)

    def media_types(self, key: str, default: tuple[str, ...] = ()) -> tuple[str, ...]:
        """An array of media types: ``type/subtype`` (RFC 6838 names), ranges, parameters.

        ``type/*``, ``*/*`` and parameters are allowed, as the server's matching understands them.
        """
        value = self.strings(key, default)
        for entry in value:
            if not _MEDIA_TYPE.match(entry):
                self.problem(
                    (key,), f"{entry!r} is not a media type type/subtype (e.g. text/plain)"
                )
        return value

    def choice(self, key: str, default: str, choices: tuple[str, ...]) -> str:
        """A string from ``choices`` (compared case-insensitively)."""
        value = self.text(key, default).lower()
        if value not in choices:
            self.problem((key,), f"must be one of {', '.join(choices)}, not {value!r}")
            return default
        return value

    def path_value(self, key: str, base: Path) -> Path | None:
        """A file system path; ``~`` expanded, relative to ``base``."""
        value = self.text(key)
        return (base / Path(value).expanduser()) if value else None

    def table(self, key: str) -> Table:
        """A sub-table (empty when absent)."""
        value = self._get(key, lambda v: isinstance(v, dict), "a table")
        return Table(value or {}, (*self.path, key), self.issues)

    def tables(self, key: str) -> list[Table]:
        """An array of tables (``[[key]]``)."""
        value = self._get(
            key,
            lambda v: isinstance(v, list) and all(isinstance(i, dict) for i in v),
            f"an array of tables ([[{key}]])",
        )
        return [
            Table(item, (*self.path, key, i), self.issues) for i, item in enumerate(value or [])
        ]

    def raw(self, key: str) -> dict[str, Any]:
        """A sub-table's content, unchecked (executor options)."""
        value = self._get(key, lambda v: isinstance(v, dict), "a table")
        return dict(value or {})

    def done(self) -> None:
        """Report every key no getter asked for."""
        for key in self.data:
            if key not in self.used:
                self.problem((key,), "unknown key")


@dataclass(frozen=True)
class ServerSection:
    """``[server]``: where and how the server runs (docs/server.md, "Configuration reference")."""

    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    public_url: str = ""
    rpc_path: str = "/"
    data_dir: Path = Path()
    storage: str = "sqlite"
    sqlite_synchronous: str = "NORMAL"
    sqlite_busy_timeout_seconds: float = BUSY_TIMEOUT_SECONDS
    log_level: str = "info"
    log_format: str = "text"
    keepalive_seconds: float = 15.0
    shutdown_grace_seconds: float = 10.0
    cors_origins: tuple[str, ...] = ()

    @property
    def database(self) -> Path:
        """The SQLite task database inside :attr:`data_dir`."""
        return self.data_dir / "tasks.sqlite3"


def read_server(
    table: Table, base: Path, overrides: Mapping[str, Any], default_dir: Callable[[], Path]
) -> ServerSection:
    """Read ``[server]``; non-``None`` ``overrides`` (command-line flags) win."""
    values: dict[str, Any] = {
        "host": table.text("host", DEFAULT_HOST),
        "port": table.integer("port", DEFAULT_PORT, 0, 65535),
        "public_url": table.text("public_url"),
        "rpc_path": table.text("rpc_path", "/"),
        "data_dir": table.path_value("data_dir", base) or default_dir(),
        "storage": table.choice("storage", "sqlite", STORAGES),
        "sqlite_synchronous": table.choice("sqlite_synchronous", "normal", ("normal", "full")),
        "sqlite_busy_timeout_seconds": table.number(
            "sqlite_busy_timeout_seconds", BUSY_TIMEOUT_SECONDS, positive=False
        ),
        "log_level": table.choice("log_level", "info", LOG_LEVELS),
        "log_format": table.choice("log_format", "text", LOG_FORMATS),
        "keepalive_seconds": table.number("keepalive_seconds", 15.0),
        "shutdown_grace_seconds": table.number("shutdown_grace_seconds", 10.0),
        "cors_origins": table.strings("cors_origins"),
    }
    table.done()
    values["sqlite_synchronous"] = values["sqlite_synchronous"].upper()
    for key, value in overrides.items():
        if value is not None:
            values[key] = Path(value) if key == "data_dir" else value
    if not values["host"]:
        table.problem(("host",), "must not be empty")
    url = yarl.URL(values["public_url"]) if values["public_url"] else None
    if url is not None and (
        not url.is_absolute() or url.scheme not in ("http", "https") or url.path not in ("", "/")
    ):
        table.problem(("public_url",), "must be http(s)://host[:port] without a path")
    if not values["rpc_path"].startswith("/"):
        table.problem(("rpc_path",), "must start with '/'")
        values["rpc_path"] = "/"
    return ServerSection(**values)


@dataclass(frozen=True)
class CardSection:
    """``[card]``: the agent card's descriptive fields and declared capabilities."""

    name: str = "a2a-wire"
    description: str = "An A2A 1.0 agent served by a2a-wire."
    version: str = __version__
    documentation_url: str = ""
    icon_url: str = ""
    provider_organization: str = ""
    provider_url: str = ""
    default_input_modes: tuple[str, ...] = ("text/plain", "application/json")
    default_output_modes: tuple[str, ...] = ("text/plain", "application/json")
    streaming: bool = True
    push_notifications: bool = True
    extensions: tuple[ExtensionEntry, ...] = ()


@dataclass(frozen=True)
class ExtensionEntry:
    """``[[card.extensions]]``: an extension the agent supports (spec 4.6)."""

    uri: str
    description: str = ""
    required: bool = False
    params: Mapping[str, Any] | None = None


def _read_extensions(tables: list[Table]) -> tuple[ExtensionEntry, ...]:
    entries = []
    for table in tables:
        entry = ExtensionEntry(
            uri=table.text("uri"),
            description=table.text("description"),
            required=table.flag("required", False),
            params=table.raw("params") or None,
        )
        table.done()
        if not entry.uri:
            table.problem(("uri",), "is required")
        entries.append(entry)
    return tuple(entries)


def read_card(table: Table) -> CardSection:
    """Read ``[card]``."""
    base = CardSection()
    provider = table.table("provider")
    card = CardSection(
        name=table.text("name", base.name),
        description=table.text("description", base.description),
        version=table.text("version", base.version),
        documentation_url=table.text("documentation_url"),
        icon_url=table.text("icon_url"),
        provider_organization=provider.text("organization"),
        provider_url=provider.text("url"),
        default_input_modes=table.media_types("default_input_modes", base.default_input_modes),
        default_output_modes=table.media_types("default_output_modes", base.default_output_modes),
        streaming=table.flag("streaming", True),
        push_notifications=table.flag("push_notifications", True),
        extensions=_read_extensions(table.tables("extensions")),
    )
    provider.done()
    table.done()
    for key in ("name", "version"):
        if not getattr(card, key):
            table.problem((key,), "must not be empty")
    return card


def allow_list(table: Table, key: str) -> tuple[str, ...]:
    entries = table.strings(key)
    for entry in entries:
        try:
            AddressPolicy.from_strings([entry])
        except ValueError as exc:
            table.problem((key,), str(exc))
    return entries


def read_network(table: Table) -> tuple[tuple[str, ...], bool]:
    """Read ``[network]``: the outgoing allowlist and ``allow_private``."""
    allow = allow_list(table, "allow")
    allow_private = table.flag("allow_private", False)
    table.done()
    return allow, allow_private
