"""The ``a2a-wire serve`` configuration: a TOML file, read with :mod:`tomllib` and checked whole.

:func:`load` returns a :class:`Config` or raises :class:`ConfigError` listing *every* problem
with its file and line, unknown keys included, so a server never starts half configured;
executors are imported during the check. Each section and key: docs/server.md,
"Configuration reference".
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import re
import sys
import sysconfig
import tomllib
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from a2a_wire.cli.config import _limits as limits
from a2a_wire.cli.config import _parts as parts
from a2a_wire.cli.config import _schema as schema
from a2a_wire.cli.config import _storage as storage
from a2a_wire.cli.config._lines import key_lines, line_of
from a2a_wire.cli.config._parts import AgentEntry, SecuritySection
from a2a_wire.cli.config._schema import (
    DEFAULT_HOST,
    DEFAULT_PORT,
    CardSection,
    ConfigIssue,
    ServerSection,
)
from a2a_wire.cli.config._storage import PostgresSection
from a2a_wire.cli.config._telemetry import TelemetrySection, read_telemetry
from a2a_wire.errors import A2AError
from a2a_wire.server import AgentExecutor, RegisteredClient, ServerSettings

__all__ = [
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "AgentEntry",
    "Config",
    "ConfigError",
    "CardSection",
    "ConfigIssue",
    "PostgresSection",
    "SecuritySection",
    "ServerSection",
    "SkillEntry",
    "default_data_dir",
    "load",
]


_POSITION = re.compile(r" \(at line (\d+), column \d+\)")


def default_data_dir() -> Path:
    """``$XDG_DATA_HOME/a2a-wire``, or ``~/.local/share/a2a-wire`` when that is unset.

    Returns:
        The folder for the task database when neither the file nor ``--data-dir`` names one.
    """
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base).expanduser() / "a2a-wire"


class ConfigError(A2AError):
    """The configuration is unusable; :attr:`issues` lists every problem found.

    Args:
        source: The file, or ``"<default>"`` for the embedded default.
        issues: The problems, in file order.
    """

    def __init__(self, source: str, issues: list[ConfigIssue]) -> None:
        self.source = source
        self.issues = issues
        super().__init__("\n".join(issue.render(source) for issue in issues))


@dataclass(frozen=True)
class SkillEntry:
    """One skill: its card entry and the executor that serves it.

    Attributes:
        id: The skill id (``AgentSkill.id``; messages name it in ``metadata.skillId``).
        name: Display name.
        description: What it does.
        tags: Card tags.
        examples: Example prompts.
        input_modes: Media types it accepts (empty: the card's defaults).
        output_modes: Media types it produces (empty: the card's defaults).
        executor_ref: The ``executor`` value as written.
        default: Whether messages naming no skill go to it.
        public: Whether it is on the public card and open to unauthenticated callers.
        executor: The built executor.
    """

    id: str
    name: str
    description: str
    tags: tuple[str, ...]
    examples: tuple[str, ...]
    input_modes: tuple[str, ...]
    output_modes: tuple[str, ...]
    executor_ref: str
    default: bool
    public: bool
    executor: AgentExecutor = field(repr=False, compare=False)


@dataclass(frozen=True)
class Config:
    """A checked configuration.

    Attributes:
        source: The file it came from, or ``None`` for the embedded default.
        server: The ``[server]`` section.
        settings: The server settings (``[server]`` and ``[limits]``).
        card: The ``[card]`` section.
        skills: The skills, in file order; exactly one has ``default`` set.
        clients: Registered callers (their credentials hashed); none: no authentication.
        security: The ``[security]`` section.
        agents: Remote agents by name.
        allow: The outgoing allowlist of ``[network]``.
        allow_private: ``[network] allow_private``: the outgoing guard is off.
        postgresql: The ``[postgresql]`` section (used with ``storage = "postgresql"``).
        telemetry: The ``[telemetry]`` section (OTLP export of traces and metrics).
    """

    source: Path | None
    server: ServerSection
    settings: ServerSettings
    card: CardSection
    skills: tuple[SkillEntry, ...]
    clients: tuple[RegisteredClient, ...]
    security: SecuritySection
    agents: Mapping[str, AgentEntry]
    allow: tuple[str, ...] = ()
    allow_private: bool = False
    postgresql: PostgresSection = PostgresSection()
    telemetry: TelemetrySection = TelemetrySection()

    @property
    def default_skill(self) -> SkillEntry:
        """The skill that takes messages naming none."""
        return next(skill for skill in self.skills if skill.default)


def load(path: str | os.PathLike[str] | None = None, **overrides: Any) -> Config:
    """Read and check a configuration file; ``None`` gives the embedded default.

    Args:
        path: The TOML file.
        **overrides: ``[server]`` values that win over the file (command-line flags such as
            ``host``, ``port``, ``data_dir``, ``log_level``); ``None`` values are ignored.

    Raises:
        ConfigError: The file cannot be read, is not TOML, or has problems (all are listed).
    """
    source = str(path) if path is not None else "<default>"
    text = ""
    if path is not None:
        try:
            text = Path(path).read_text(encoding="utf-8-sig")  # a BOM is allowed
        except (OSError, UnicodeDecodeError) as exc:
            reason = getattr(exc, "strerror", None) or str(exc)
            raise ConfigError(source, [ConfigIssue(None, "", f"cannot read: {reason}")]) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        where = _POSITION.search(str(exc))
        line = int(where.group(1)) if where else None
        message = _POSITION.sub("", str(exc))
        raise ConfigError(source, [ConfigIssue(line, "", f"not valid TOML: {message}")]) from None
    lines = key_lines(text)
    issues = schema.Issues(lambda key: line_of(lines, key))
    base = Path(path).resolve().parent if path is not None else Path.cwd()
    root = schema.Table(data, (), issues)
    server_table = root.table("server")
    server = schema.read_server(server_table, base, overrides, default_data_dir)
    postgresql = storage.read_postgresql(root.table("postgresql"), server_table, server.storage)
    telemetry = read_telemetry(root.table("telemetry"))
    card = schema.read_card(root.table("card"))
    allow, allow_private = schema.read_network(root.table("network"))
    settings = limits.read_settings(root, server_table, server, allow)
    agents = parts.read_agents(root.tables("agents"), base, allow, allow_private)
    skills = _read_skills(root.tables("skills"), agents, issues, base)
    ids = {s.id for s in skills}
    clients = parts.read_clients(root.tables("clients"), base, ids)
    security = parts.read_security(root.table("security"), base, bool(clients), allow, ids)
    root.done()
    if issues.items:
        raise ConfigError(source, sorted(issues.items, key=lambda i: (i.line or 0, i.key)))
    return Config(
        source=Path(path) if path is not None else None,
        server=server,
        settings=settings or ServerSettings(),
        card=card,
        skills=tuple(skills),
        clients=tuple(clients),
        security=security,
        agents=agents,
        allow=allow,
        allow_private=allow_private,
        postgresql=postgresql,
        telemetry=telemetry,
    )


def _read_skills(
    tables: list[schema.Table],
    agents: Mapping[str, AgentEntry],
    issues: schema.Issues,
    folder: Path,
) -> list[SkillEntry]:
    """The ``[[skills]]`` tables, with their executors built; the two built-ins by default."""
    if not tables:
        tables = [
            schema.Table({"executor": "echo", "default": True}, ("skills",), issues),
            schema.Table({"executor": "delegate"}, ("skills",), issues),
        ]
    skills: list[SkillEntry] = []
    defaults: list[schema.Table] = []
    seen: set[str] = set()
    for table in tables:
        spec = parts.read_skill(table)
        if spec is None:
            continue
        if spec.id in seen:
            table.problem(("id",), f"skill {spec.id!r} is defined twice")
            continue
        seen.add(spec.id)
        if spec.default:
            defaults.append(table)
        executor = _build_executor(table, spec, agents, folder)
        if executor is not None:
            skills.append(SkillEntry(**spec.card_fields(), executor=executor))
    for table in defaults[1:]:
        table.problem(("default",), "only one skill can be the default")
    if skills and not any(skill.default for skill in skills):
        skills[0] = dataclasses.replace(skills[0], default=True)
    return skills


def _build_executor(
    table: schema.Table, spec: parts.SkillSpec, agents: Mapping[str, AgentEntry], folder: Path
) -> AgentExecutor | None:
    """Make the executor ``spec`` names; report a failure at the ``executor`` key."""
    from a2a_wire.cli import _skills as skills_builtin

    options = spec.options
    ref = spec.executor_ref
    try:
        if ref == "echo":
            return skills_builtin.EchoSkill(**options)
        if ref == "delegate":
            remote = {name: entry.remote_agent() for name, entry in agents.items()}
            return skills_builtin.DelegateSkill(remote, **options)
    except (TypeError, ValueError) as exc:
        table.problem(("options",), f"options for {ref!r} refused: {exc}")
        return None
    try:
        factory = _import(ref, folder)
    except (Exception, SystemExit) as exc:  # the user's module: whatever its import raised
        table.problem(("executor",), f"cannot load {ref!r}: {_failure(exc)}")
        return None
    return _instantiate(table, ref, factory, options)


def _failure(exc: BaseException) -> str:
    """``SyntaxError: invalid syntax at /path/agent.py:3``: the error and where it happened.

    The place is the innermost frame of the traceback outside the standard library and the
    import machinery (the user's line, not ``os.environ``'s ``__getitem__``); for a syntax error,
    the file and line the compiler names. Nothing is added when no frame qualifies (a module
    that does not exist, an attribute the module lacks).
    """
    what = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, SyntaxError):
        what = f"{type(exc).__name__}: {exc.msg}"
        if exc.filename and exc.lineno:
            return f"{what} at {exc.filename}:{exc.lineno}"
    frames = traceback.extract_tb(exc.__traceback__)
    stdlib = (sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["platstdlib"], __file__)
    own = [f for f in frames if not f.filename.startswith(("<", *stdlib))]
    return f"{what} at {own[-1].filename}:{own[-1].lineno}" if own else what


def _import(ref: str, folder: Path) -> object:
    """``module:attribute``, with the configuration file's folder importable."""
    module_name, _, attribute = ref.partition(":")
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
    target: object = importlib.import_module(module_name)
    for name in attribute.split("."):
        target = getattr(target, name)
    return target


def _instantiate(
    table: schema.Table, ref: str, factory: object, options: dict[str, Any]
) -> AgentExecutor | None:
    """An executor from an instance, a subclass of AgentExecutor, or a factory callable."""
    if isinstance(factory, AgentExecutor):
        if options:
            table.problem(("options",), f"{ref!r} is an executor instance; it takes no options")
            return None
        return factory
    if not callable(factory):
        table.problem(("executor",), f"{ref!r} is neither an AgentExecutor nor callable")
        return None
    make: Callable[..., object] = factory
    try:
        made = make(**options)
    except (TypeError, ValueError) as exc:
        table.problem(("options",), f"{ref!r} refused its options: {exc}")
        return None
    except (Exception, SystemExit) as exc:  # the user's code, e.g. a missing environment variable
        table.problem(("executor",), f"{ref!r} could not be built: {_failure(exc)}")
        return None
    if not isinstance(made, AgentExecutor):
        table.problem(("executor",), f"{ref!r} did not produce an AgentExecutor")
        return None
    return made
