"""``a2a-wire serve``: run the server until SIGTERM or SIGINT, then stop cleanly.

Start: the configuration is checked whole before anything opens (a bad file exits with
:data:`~a2a_wire.cli._common.EXIT_CONFIG` and every problem listed); then the data directory
and the task store are opened (recovery: tasks a dead process left SUBMITTED or WORKING become
FAILED), the socket is bound and one ``listening`` line is logged with the URL.

Stop, on the first SIGTERM or SIGINT:

1. new requests are refused (the socket is closed; requests on kept-alive connections get
   HTTP 503 with ``Connection: close``);
2. running requests and agent runs get ``shutdown_grace_seconds`` to finish;
3. streams still open then get a final error event saying the server is stopping (clients
   re-subscribe after the restart), agent runs are cancelled and get ``shutdown_grace_seconds``
   more, and the store is closed;
4. the process exits 0, at once, even when an agent run ignored its cancellation (it is not
   left running against a closed store; the next start marks its task FAILED).

A second SIGTERM or SIGINT, at any point of these steps, ends the process at once with status
128 + the signal's number (143 for SIGTERM, 130 for Ctrl-C), whatever the agent runs do. The
store needs no closing for that: SQLite keeps every committed transaction, and the next start
marks the tasks that were running FAILED.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sqlite3
import sys
import time
from typing import NoReturn

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


def _exit_now(status: int) -> NoReturn:
    """End the process without waiting for anything (agent runs, the loop's pending tasks)."""
    logging.shutdown()  # flush the log handlers first
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


class _Signals:
    """Counts SIGTERM/SIGINT: the first asks for a clean stop, the second ends the process."""

    def __init__(self) -> None:
        self.stop = asyncio.Event()

    def __call__(self, signum: int) -> None:
        name = signal.Signals(signum).name
        if self.stop.is_set():
            log.warning("second signal: exiting now", extra={"fields": {"signal": name}})
            _exit_now(128 + signum)
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


async def _drain(app: web.Application, requests: RequestLog, grace: float) -> None:
    """Wait until no request or agent run is active, at most ``grace`` seconds."""
    runtime = app[RUNTIME_KEY]
    deadline = time.monotonic() + grace
    while requests.active or runtime.runs:
        left = deadline - time.monotonic()
        if left <= 0:
            log.warning(
                "grace period over",
                extra={"fields": {"requests": requests.active, "runs": len(runtime.runs)}},
            )
            return
        await asyncio.sleep(min(0.05, left))


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
        await _stop(runner, site, requests, config.server.shutdown_grace_seconds)
    finally:
        signals.remove()
    log.info("stopped")
    stubborn = [run for run in app[RUNTIME_KEY].runs if not run.done()]
    if stubborn:  # they ignored cancellation: never let them run on against the closed store
        log.warning(
            "exiting without the agent runs that ignored cancellation",
            extra={"fields": {"runs": len(stubborn)}},
        )
        _exit_now(0)
    return 0


async def _stop(
    runner: web.AppRunner, site: web.TCPSite, requests: RequestLog, grace: float
) -> None:
    """Steps 1 to 3 of the module docstring: refuse, drain, end streams, cancel, close."""
    app = runner.app
    requests.draining = True
    await site.stop()
    await _drain(app, requests, grace)
    closing = InternalError("The server is stopping; subscribe again once it is back")
    for hub in list(app[RUNTIME_KEY].hubs.values()):
        hub.finish_all(closing)
    await runner.cleanup()
