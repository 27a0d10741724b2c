"""A click group whose commands are imported when one is asked for, not when the group is.

A client command then starts without loading the server, the configuration schema or the
inspector; ``--help`` of the group imports them all, to show each one's summary.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

import click

__all__ = ["LazyGroup"]


class LazyGroup(click.Group):
    """A :class:`click.Group` with commands named by where they are defined.

    Args:
        commands_at: Each command's name and its ``"module:attribute"``.
    """

    def __init__(self, *args: Any, commands_at: Mapping[str, str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._commands_at = dict(commands_at)

    def list_commands(self, ctx: click.Context) -> list[str]:
        """The names of the commands, the lazy ones and any added, sorted."""
        return sorted({*super().list_commands(ctx), *self._commands_at})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """The command ``cmd_name``, imported on first use; ``None`` for an unknown name."""
        where = self._commands_at.get(cmd_name)
        if where is None:
            return super().get_command(ctx, cmd_name)
        module, _, attribute = where.partition(":")
        command = getattr(importlib.import_module(module), attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"{where} is not a click command")
        self.add_command(command, cmd_name)
        del self._commands_at[cmd_name]
        return command
