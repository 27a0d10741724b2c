"""``a2a-wire db migrate``: create or upgrade the PostgreSQL task schema, and nothing else.

A server opening the PostgreSQL store migrates on its own, under an advisory lock; this command
does the same step alone (before a deploy, or where the server's role may not change the
schema). It needs the ``postgresql`` extra. Exit codes: 0 done (or already current), 3 no
connection to the server, 1 any other failure (such as a schema newer than this a2a-wire).
"""

from __future__ import annotations

import asyncio

import click

from a2a_wire.cli._common import EXIT_CONNECTION
from a2a_wire.server.store._log_postgres_sql import DEFAULT_SCHEMA, migrate

__all__ = ["db"]

DSN_VARIABLE = "A2A_WIRE_DSN"


@click.group()
def db() -> None:
    """Manage the PostgreSQL task database."""


@db.command("migrate")
@click.option(
    "--dsn",
    required=True,
    envvar=DSN_VARIABLE,
    help=f"PostgreSQL address, e.g. postgresql://user@host:5432/db (or ${DSN_VARIABLE}).",
)
@click.option(
    "--schema",
    default=DEFAULT_SCHEMA,
    show_default=True,
    help="PostgreSQL schema of the task tables.",
)
def migrate_command(dsn: str, schema: str) -> None:
    """Create the task schema, or bring it to this version's layout."""
    try:
        before, after = asyncio.run(migrate(dsn, schema=schema))
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--schema") from None
    except (OSError, TimeoutError) as exc:
        click.echo(f"error: cannot connect to PostgreSQL: {exc}", err=True)
        raise click.exceptions.Exit(EXIT_CONNECTION) from None
    except Exception as exc:  # the driver's errors, a newer schema: report and fail
        click.echo(f"error: cannot migrate schema {schema!r}: {exc}", err=True)
        raise click.exceptions.Exit(1) from None
    if before == after:
        click.echo(f"schema {schema!r} is at version {after}; nothing to do")
    elif before == 0:
        click.echo(f"schema {schema!r} created at version {after}")
    else:
        click.echo(f"schema {schema!r} migrated from version {before} to {after}")
