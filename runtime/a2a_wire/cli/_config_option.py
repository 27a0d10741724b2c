"""The ``--config`` option of ``serve`` and ``db migrate``, and how both report a bad file.

Both commands read the one server configuration, so they name it the same way: the option, or
the ``A2A_WIRE_CONFIG`` variable when the option is not given.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from a2a_wire.cli._common import EXIT_CONFIG
from a2a_wire.cli.config import Config, ConfigError, load

__all__ = ["CONFIG_VARIABLE", "config_option", "load_or_exit"]

#: The environment variable ``--config`` falls back to.
CONFIG_VARIABLE = "A2A_WIRE_CONFIG"

F = TypeVar("F", bound=Callable[..., Any])


def config_option(purpose: str) -> Callable[[F], F]:
    """The ``--config`` option, passed to the command as ``config_path`` (a ``Path`` or ``None``).

    Args:
        purpose: The option's help text: what the file is for (click adds the variable).
    """
    return click.option(
        "--config",
        "config_path",
        type=click.Path(dir_okay=False, path_type=Path),
        envvar=CONFIG_VARIABLE,
        show_envvar=True,
        help=purpose,
    )


def load_or_exit(config_path: Path | None, **overrides: Any) -> Config:
    """:func:`~a2a_wire.cli.config.load`, or every problem on stderr and exit code 6.

    Raises:
        click.exceptions.Exit: The configuration is invalid (``EXIT_CONFIG``).
    """
    try:
        return load(config_path, **overrides)
    except ConfigError as exc:
        click.echo(f"error: invalid configuration {exc.source}", err=True)
        for issue in exc.issues:
            click.echo(f"  {issue.render(exc.source)}", err=True)
        raise click.exceptions.Exit(EXIT_CONFIG) from None
