"""``a2a-wire db migrate``: create or upgrade the PostgreSQL task schema, and nothing else.

A server opening the PostgreSQL store migrates on its own, under an advisory lock; this command
does the same step alone (before a deploy, or where the server's role may not change the
schema). It needs the ``postgresql`` extra. With ``--config`` it reads the server's ``[postgresql]``
table (the address, the schema, the connect timeout); ``--dsn`` and ``--schema`` win over it.
Exit codes: 0 done (or already current), 2 no address, 3 no connection to the server, 6 the
configuration is invalid, 1 any other failure (such as a schema newer than this a2a-wire).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import click

from a2a_wire.cli._common import EXIT_CONNECTION
from a2a_wire.cli._config_option import config_option, load_or_exit
from a2a_wire.cli.config import PostgresSection
from a2a_wire.server.store import DEFAULT_SCHEMA, describe, migrate

__all__ = ["db"]

DSN_VARIABLE = "A2A_WIRE_DSN"


@click.group()
def db() -> None:
    """Manage the PostgreSQL task database."""


def _section(config_path: Path | None) -> PostgresSection:
    """``[postgresql]`` of the file, checked as ``serve`` checks it; the defaults without one."""
    if config_path is None:
        return PostgresSection()
    return load_or_exit(config_path).postgresql


@db.command("migrate")
@config_option("The serve configuration whose [postgresql] table to use.")
@click.option(
    "--dsn",
    help="PostgreSQL address, e.g. postgresql://user@host:5432/db (default: [postgresql] dsn, "
    f"else the variable dsn_env names, ${DSN_VARIABLE} unless set otherwise).",
)
@click.option(
    "--schema",
    help=f"PostgreSQL schema of the task tables (default: [postgresql] schema, else {DEFAULT_SCHEMA}).",
)
def migrate_command(config_path: Path | None, dsn: str | None, schema: str | None) -> None:
    """Create the task schema, or bring it to this version's layout."""
    section = _section(config_path)
    dsn = dsn or section.address()
    if not dsn:
        raise click.UsageError(
            f"no PostgreSQL address: pass --dsn, set ${section.dsn_env} or use --config"
            " with a [postgresql] table"
        )
    schema = schema or section.schema
    bounds = {
        "connect_timeout": section.connect_timeout_seconds,
        "lock_timeout": section.migration_lock_timeout_seconds,
        "statement_timeout": section.statement_timeout_seconds,
    }
    try:
        before, after = asyncio.run(migrate(dsn, schema=schema, **bounds))
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--schema") from None
    except (OSError, TimeoutError) as exc:
        click.echo(f"error: cannot connect to PostgreSQL: {describe(exc)}", err=True)
        raise click.exceptions.Exit(EXIT_CONNECTION) from None
    except Exception as exc:  # the driver's errors, a newer schema: report and fail
        hint = ""
        if type(exc).__name__ == "LockNotAvailableError":  # asyncpg's, for lock_timeout
            hint = (
                "; another session holds a lock on it (see pg_locks): end that session, or"
                " raise [postgresql] migration_lock_timeout_seconds"
            )
        click.echo(f"error: cannot migrate schema {schema!r}: {describe(exc)}{hint}", err=True)
        raise click.exceptions.Exit(1) from None
    if before == after:
        click.echo(f"schema {schema!r} is at version {after}; nothing to do")
    elif before == 0:
        click.echo(f"schema {schema!r} created at version {after}")
    else:
        click.echo(f"schema {schema!r} migrated from version {before} to {after}")
