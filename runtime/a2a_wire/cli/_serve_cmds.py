"""``a2a-wire serve`` and ``a2a-wire hash-secret``: the commands of the server role.

``serve`` runs :func:`a2a_wire.cli._serve.serve` on the configuration ``--config`` names (or the
embedded default), alone or as the supervisor of ``--workers`` processes on one address.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, NoReturn

import click

from a2a_wire.cli._common import EXIT_CONFIG
from a2a_wire.cli._config_option import config_option, load_or_exit
from a2a_wire.cli._logging import configure_logging
from a2a_wire.cli._serve import StartError, Worker
from a2a_wire.cli._serve import serve as run_server
from a2a_wire.cli._workers import refusal, supervise
from a2a_wire.server import generate_token, hash_secret

__all__ = ["hash_secret_command", "serve"]


@click.command()
@config_option("TOML configuration file; the embedded default without one.")
@click.option("--host", help="Address to listen on (overrides [server] host).")
@click.option("--port", type=click.IntRange(0, 65535), help="Port (overrides [server] port).")
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder of the task database (overrides [server] data_dir).",
)
@click.option(
    "--log-level",
    type=click.Choice(["debug", "info", "warning", "error"]),
    help="Overrides [server] log_level.",
)
@click.option("--log-format", type=click.Choice(["text", "json"]), help="Overrides [server].")
@click.option(
    "--log-sql",
    is_flag=True,
    envvar="A2A_WIRE_LOG_SQL",
    help="With --log-level debug, also log every SQL statement (aiosqlite).",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Server processes on the one address, under a supervisor (storage postgresql only).",
)
@click.option("--worker-fds", hidden=True, help="Internal: a worker's inherited sockets.")
@click.option("--worker-index", type=int, default=0, hidden=True, help="Internal: its number.")
@click.option("--check", is_flag=True, help="Check the configuration and exit.")
def serve(
    config_path: Path | None,
    host: str | None,
    port: int | None,
    data_dir: Path | None,
    log_level: str | None,
    log_format: str | None,
    log_sql: bool,
    workers: int,
    worker_fds: str | None,
    worker_index: int,
    check: bool,
) -> None:
    """Run the A2A server until SIGTERM or SIGINT."""
    overrides = {
        "host": host,
        "port": port,
        "data_dir": data_dir,
        "log_level": log_level,
        "log_format": log_format,
    }
    config = load_or_exit(config_path, **overrides)
    refused = refusal(config, workers)
    if refused is not None:
        click.echo(f"error: {refused}", err=True)
        raise click.exceptions.Exit(EXIT_CONFIG)
    if check:
        skills = ", ".join(skill.id for skill in config.skills)
        click.echo(f"configuration OK: {config.server.host}:{config.server.port}, skills {skills}")
        return
    configure_logging(config.server.log_level, config.server.log_format, sql=log_sql)
    if workers > 1:
        args = _worker_args(config_path, overrides, log_sql)
        _run(supervise(config, workers, args))
    _run(run_server(config, _worker(worker_fds, worker_index)))


def _worker_args(config_path: Path | None, overrides: dict[str, Any], log_sql: bool) -> list[str]:
    """The ``serve`` arguments of each worker: this command's own, but ``--workers``."""
    args = ["--config", str(config_path)] if config_path is not None else []
    for name, value in overrides.items():
        if value is not None:
            args += [f"--{name.replace('_', '-')}", str(value)]
    return [*args, "--log-sql"] if log_sql else args


def _worker(fds: str | None, index: int) -> Worker | None:
    """The sockets a supervisor passed (``--worker-fds``), or ``None`` for a server of its own."""
    if fds is None:
        return None
    try:
        return Worker.from_fds([int(fd) for fd in fds.split(",")], index)
    except (ValueError, OSError) as exc:
        raise click.BadParameter(str(exc), param_hint="--worker-fds") from None


def _run(main: Coroutine[Any, Any, int]) -> NoReturn:
    """Run ``serve`` or the supervisor and exit with its status (1 when it cannot start)."""
    try:
        code = asyncio.run(main)
    except StartError as exc:
        click.echo(f"error: cannot start: {exc}", err=True)
        raise click.exceptions.Exit(1) from None
    raise click.exceptions.Exit(code)


def _generate(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    """``--generate``: print a new credential and its hash, then stop (before any prompt)."""
    if not value or ctx.resilient_parsing:
        return
    token = generate_token()
    click.echo(token)
    click.echo(hash_secret(token))
    click.echo(
        "line 1: the new credential, for the client only (not shown again); "
        "line 2: its hash, for token_hash or api_key_hash",
        err=True,
    )
    ctx.exit()


@click.command("hash-secret")
@click.option(
    "--generate",
    is_flag=True,
    is_eager=True,
    expose_value=False,
    callback=_generate,
    help="Make a new credential with a key id (one scrypt run per first use, whatever the "
    "number of clients) and print it and its hash.",
)
@click.option(
    "--secret",
    help="The token or API key (else asked for on a terminal, or one line read from a pipe).",
)
def hash_secret_command(secret: str | None) -> None:
    """Print the scrypt hash of a client credential for [[clients]] token_hash/api_key_hash.

    Without --secret, the secret is asked for twice, hidden, on a terminal; from a pipe
    (``echo "$TOKEN" | a2a-wire hash-secret``) its first line is read, without its line end.
    With --generate, make the credential too: the server then verifies it with one scrypt run
    however many clients it has.
    """
    if secret is None:
        if sys.stdin.isatty():
            secret = click.prompt("Secret", hide_input=True, confirmation_prompt=True)
        else:
            secret = sys.stdin.readline().rstrip("\r\n")
    if not secret:
        raise click.BadParameter("must not be empty", param_hint="--secret")
    click.echo(hash_secret(secret))
