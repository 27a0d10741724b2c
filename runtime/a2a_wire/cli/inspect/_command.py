"""``a2a-wire inspect [URL] [--port P]``: serve the inspector page on 127.0.0.1 until stopped.

It prints one line, ``inspector on http://127.0.0.1:<port>/<token>/``, then serves the page
(:mod:`a2a_wire.cli.inspect._app`) until SIGINT or SIGTERM. With ``URL`` the page opens that
agent when it loads. The credential, ``--allow``/``--allow-private`` and ``--timeout`` options
are those of the other client commands (:mod:`a2a_wire.cli._common`).
"""

from __future__ import annotations

import asyncio
import secrets
import signal
import sys
import webbrowser
from pathlib import Path

import click
from aiohttp import web

from a2a_wire.cli._common import ClientOptions, agent_options
from a2a_wire.cli._install import install_command
from a2a_wire.cli.inspect._agent import AgentSession
from a2a_wire.cli.inspect._api import Api
from a2a_wire.cli.inspect._app import Guard, create_app
from a2a_wire.cli.inspect._checks import Verify
from a2a_wire.cli.inspect._live import LiveHub
from a2a_wire.cli.inspect._traffic import TrafficLog

__all__ = ["inspect"]

HOST = "127.0.0.1"


def _verifier(path: Path | None) -> Verify | None:
    if path is None:
        return None
    try:
        from a2a_wire.card_signing import CardVerifier, TrustedKeys
    except ImportError:
        raise click.UsageError(
            f"--card-keys needs the signing extra: {install_command('signing')}"
        ) from None
    try:
        keys = TrustedKeys.from_file(path)
    except (OSError, ValueError) as exc:
        raise click.BadParameter(str(exc), param_hint="--card-keys") from None
    return CardVerifier(keys).verify


async def _serve(api: Api, traffic: TrafficLog, port: int, open_browser: bool) -> None:
    token = secrets.token_urlsafe(24)
    guard = Guard(token, secrets.token_urlsafe(24))
    runner = web.AppRunner(
        create_app(api, traffic, guard), access_log=None, handle_signals=False, shutdown_timeout=2
    )
    await runner.setup()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    try:
        site = web.TCPSite(runner, HOST, port)
        await site.start()
        bound = next(a[1] for a in runner.addresses if isinstance(a, tuple))
        guard.bind(bound)
        api.webhook_url = f"http://{HOST}:{bound}/hook/{guard.hook_secret}"
        address = f"http://{HOST}:{bound}/{token}/"
        click.echo(f"inspector on {address}")
        click.echo("stop it with Ctrl-C", err=True)
        sys.stdout.flush()
        if open_browser:
            webbrowser.open(address)
        await stop.wait()
    finally:
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(signum)
        await runner.cleanup()


@click.command("inspect")
@click.argument("url", required=False, default="")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=0,
    show_default=True,
    help="Port on 127.0.0.1 (0: a free one).",
)
@click.option(
    "--card-keys",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="JWKS of the keys trusted to sign agent cards (checks their signatures).",
)
@click.option("--open", "open_browser", is_flag=True, help="Open the page in a browser.")
@agent_options
def inspect(
    url: str, port: int, card_keys: Path | None, open_browser: bool, opts: ClientOptions
) -> None:
    """Explore and debug an A2A agent in a local web page (optionally the one at URL)."""
    if url and not url.startswith(("http://", "https://")):
        raise click.BadParameter(f"{url!r} is not an http(s) URL", param_hint="URL")
    opts.credentials()  # two credential sources are a usage error now, not on the first call
    verify = _verifier(card_keys)
    hub = LiveHub()
    traffic = TrafficLog(hub.publish, secret_headers=[opts.auth_header])
    hub.backlog = traffic.records
    api = Api(AgentSession(opts, traffic, verify), hub, initial_url=url)
    try:
        asyncio.run(_serve(api, traffic, port, open_browser))
    except OSError as exc:
        raise click.ClickException(
            f"cannot listen on {HOST}:{port}: {exc.strerror or exc}"
        ) from None
