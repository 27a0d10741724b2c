"""The ``a2a-wire`` command line: ``serve`` and the client commands.

``a2a-wire serve`` runs the server (:mod:`a2a_wire.cli._serve`) on the configuration of
:mod:`a2a_wire.cli.config._load`; ``card``, ``send``, ``get``, ``list``, ``cancel``, ``subscribe``,
``push`` and ``webhook`` talk to agents (:mod:`a2a_wire.cli._client_cmds`,
:mod:`a2a_wire.cli._push_cmds`); ``inspect`` serves a local web page to explore one
(:mod:`a2a_wire.cli.inspect`); ``db migrate`` prepares a PostgreSQL task schema
(:mod:`a2a_wire.cli._db`). A command's module is imported when the command runs, so a client
command never loads the server. Needs the ``cli`` extra (click, rich):
``pip install -e ".[cli]"`` in the checkout. Also runs as ``python -m a2a_wire``.
"""

from __future__ import annotations

import click

from a2a_wire import __version__
from a2a_wire.cli._lazy_group import LazyGroup

__all__ = ["cli", "main"]

COMMANDS = {
    "serve": "a2a_wire.cli._serve_cmds:serve",
    "hash-secret": "a2a_wire.cli._serve_cmds:hash_secret_command",
    "card": "a2a_wire.cli._client_cmds:card",
    "send": "a2a_wire.cli._client_cmds:send",
    "get": "a2a_wire.cli._client_cmds:get",
    "list": "a2a_wire.cli._client_cmds:list_tasks",
    "cancel": "a2a_wire.cli._client_cmds:cancel",
    "subscribe": "a2a_wire.cli._client_cmds:subscribe",
    "push": "a2a_wire.cli._push_cmds:push",
    "webhook": "a2a_wire.cli._push_cmds:webhook",
    "inspect": "a2a_wire.cli.inspect:inspect",
    "db": "a2a_wire.cli._db:db",
}
"""Each command's name and where it is defined (``module:attribute``)."""


@click.group(
    cls=LazyGroup,
    commands_at=COMMANDS,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.version_option(__version__, prog_name="a2a-wire")
def cli() -> None:
    """a2a-wire: an Agent2Agent (A2A) 1.0 server and client over JSON-RPC."""


def main() -> None:
    """The ``a2a-wire`` console script."""
    cli(prog_name="a2a-wire")
