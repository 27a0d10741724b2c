"""``a2a-wire serve``: run the server until SIGTERM or SIGINT, then stop cleanly.

Start: the configuration is checked whole before anything opens (a bad file exits with
:data:`~a2a_wire.cli._common.EXIT_CONFIG` and every problem listed); then the data directory
and the task store are opened (recovery: tasks a dead process left SUBMITTED or WORKING become
FAILED), the socket is bound and one ``listening`` line is logged with the URL.

Stop, on the first SIGTERM or SIGINT:

1. new requests are refused (the socket is closed; requests on kept-alive connections get
   HTTP 503 with ``Connection: close``);
2. running requests and agent runs get ``shutdown_grace_seconds`` to finish (a second signal
   skips the wait);
3. streams still open then get a final error event saying the server is stopping (clients
   re-subscribe after the restart), agent runs are cancelled, and the store is closed;
4. the process exits 0.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sqlite3
import time

from aiohttp import web

from a2a_wire.cli._app import build_app
from a2a_wire.cli._logging import RequestLog
from a2a_wire.cli.config._load import Config
from a2a_wire.errors import A2AError, InternalError
from a2a_wire.server._app import RUNTIME_KEY

__all__ = ["StartError", "serve"]

log = logging.getLogger("a2a_wire.serve")


class StartError(A2AError):
    """The server could not start (address in use, data directory unusable, store locked)."""


class _Signals:
    """Counts SIGTERM/SIGINT: the first asks for a clean stop, the second for haste."""

    def __init__(self) -> None:
        self.stop = asyncio.Event()
        self.hurry = asyncio.Event()

    def __call__(self, signum: int) -> None:
        name = signal.Signals(signum).name
        if self.stop.is_set():
            log.warning(
                "second signal: stopping without waiting", extra={"fields": {"signal": name}}
            )
            self.hurry.set()
        else:
            log.info("stopping", extra={"fields": {"signal": name}})
            self.stop.set()

    def install(self) -> None:
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, self, signum)

    def remove(self) -> None:
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(signum)


async def _start(config: Config) -> tuple[web.AppRunner, web.TCPSite, RequestLog]:
    try:
        app, requests = build_app(config)
    except OSError as exc:
        raise StartError(f"cannot use data directory {config.server.data_dir}: {exc}") from exc
    runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=1.0)
    try:
        await runner.setup()
    except (OSError, RuntimeError, sqlite3.Error) as exc:
        await runner.cleanup()
        raise StartError(f"cannot open the task store: {exc}") from exc
    site = web.TCPSite(runner, config.server.host, config.server.port)
    try:
        await site.start()
    except OSError as exc:
        await runner.cleanup()
        where = f"{config.server.host}:{config.server.port}"
        raise StartError(f"cannot listen on {where}: {exc.strerror or exc}") from exc
    return runner, site, requests


def _listening_url(runner: web.AppRunner, config: Config) -> str:
    for address in runner.addresses:
        if isinstance(address, tuple):
            host, port = address[0], address[1]
            host = f"[{host}]" if ":" in str(host) else host
            return f"http://{host}:{port}"
    return f"http://{config.server.host}:{config.server.port}"


async def _drain(
    app: web.Application, requests: RequestLog, grace: float, hurry: asyncio.Event
) -> None:
    """Wait until no request or agent run is active, at most ``grace`` seconds."""
    runtime = app[RUNTIME_KEY]
    deadline = time.monotonic() + grace
    while (requests.active or runtime.runs) and not hurry.is_set():
        left = deadline - time.monotonic()
        if left <= 0:
            log.warning(
                "grace period over",
                extra={"fields": {"requests": requests.active, "runs": len(runtime.runs)}},
            )
            return
        try:
            await asyncio.wait_for(hurry.wait(), timeout=min(0.05, left))
        except TimeoutError:
            pass


async def serve(config: Config) -> int:
    """Run the server of ``config`` until a signal stops it.

    Args:
        config: The checked configuration.

    Returns:
        The exit status: 0 after a clean stop.

    Raises:
        StartError: The server could not start.
    """
    runner, site, requests = await _start(config)
    app = runner.app
    signals = _Signals()
    signals.install()
    try:
        skills = ",".join(skill.id for skill in config.skills)
        where = config.server.database if config.server.storage == "sqlite" else "memory"
        log.info(
            "listening",
            extra={
                "fields": {
                    "url": _listening_url(runner, config),
                    "store": str(where),
                    "skills": skills,
                }
            },
        )
        await signals.stop.wait()
        requests.draining = True
        await site.stop()
        await _drain(app, requests, config.server.shutdown_grace_seconds, signals.hurry)
        closing = InternalError("The server is stopping; subscribe again once it is back")
        for hub in list(app[RUNTIME_KEY].hubs.values()):
            hub.finish_all(closing)
        await runner.cleanup()
    finally:
        signals.remove()
    log.info("stopped")
    return 0
