"""The TOML configuration of ``a2a-wire serve``: read, checked whole, turned into settings.

:func:`load` reads a file (or nothing, for the embedded default) and returns a :class:`Config`,
or raises :class:`ConfigError` listing every problem with its line. Only the CLI uses it.
"""

from a2a_wire.cli.config._load import (
    DEFAULT_HOST,
    DEFAULT_PORT,
    AgentEntry,
    CardSection,
    Config,
    ConfigError,
    ConfigIssue,
    PostgresSection,
    SecuritySection,
    ServerSection,
    SkillEntry,
    default_data_dir,
    load,
)

__all__ = [
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "AgentEntry",
    "CardSection",
    "Config",
    "ConfigError",
    "ConfigIssue",
    "PostgresSection",
    "SecuritySection",
    "ServerSection",
    "SkillEntry",
    "default_data_dir",
    "load",
]
