"""``a2a-wire serve``: run the server until SIGTERM or SIGINT, then stop cleanly.

Start: the store opens (recovering tasks a dead process left running) before the socket binds.
Stop, on the first signal: refuse new requests, give running ones and agent runs
``shutdown_grace_seconds``, end open streams with an error event that says what becomes of the
task (:func:`stopping_error`), cancel the runs (as long again), close the store, exit 0 even if
a run ignored its cancellation. A second signal exits at once with 128 + its number. As a
worker of ``serve --workers`` (:class:`Worker`) the process is handed its sockets and a
channel, and the supervisor's ``stop`` drains it as a first signal would without counting as
one. In full: docs/internals/cli.md ("Start and stop of serve").
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import sqlite3
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NoReturn

from aiohttp import web

from a2a_wire.cli._app import build_app
from a2a_wire.cli._exporting import ScrapeEndpointError
from a2a_wire.cli._logging import RequestLog
from a2a_wire.cli.config._load import Config
from a2a_wire.errors import A2AError, InternalError, ProtocolError, UnavailableError
from a2a_wire.server import HEALTH_KEY, RUNTIME_KEY, STORE_KEY
from a2a_wire.server.store import SharedTaskStore, StoreUnavailableError, describe

__all__ = [
    "READY",
    "STOP",
    "StartError",
    "Worker",
    "exit_now",
    "listening_url",
    "serve",
    "store_label",
    "stopping_error",
]

log = logging.getLogger("a2a_wire.serve")


READY = b"ready\n"
"""What a worker writes on its channel once it serves."""

STOP = b"stop\n"
"""What the supervisor writes on a worker's channel to stop it (as a first signal would)."""


class StartError(A2AError):
    """The server could not start (address in use, data directory unusable, store locked)."""


@dataclass(frozen=True)
class Worker:
    """What a worker of ``serve --workers`` gets from its supervisor.

    Attributes:
        sockets: The listening sockets, bound by the supervisor and shared by every worker.
        channel: A stream socket to the supervisor (``ready`` out; ``stop`` or its closing in).
        index: The worker's number (1 to N, ``serve --worker-index``), named in its log lines.
    """

    sockets: Sequence[socket.socket]
    channel: socket.socket
    index: int = 0

    @classmethod
    def from_fds(cls, fds: Sequence[int], index: int = 0) -> Worker:
        """The sockets inherited as file descriptors: the listening ones, then the channel.

        Args:
            fds: Descriptor numbers (``serve --worker-fds``), at least two.
            index: The worker's number.

        Returns:
            The worker's sockets.

        Raises:
            ValueError: fewer than two descriptors.
            OSError: a descriptor is not an open socket.
        """
        if len(fds) < 2:
            raise ValueError("a worker needs a listening socket and a channel")
        *listening, channel = (socket.socket(fileno=fd) for fd in fds)
        return cls(tuple(listening), channel, index)


def exit_now(status: int) -> NoReturn:
    """End the process without waiting for anything (agent runs, the loop's pending tasks).

    Args:
        status: The exit status.
    """
    logging.shutdown()  # flush the log handlers first
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


class _Signals:
    """Counts SIGTERM/SIGINT: the first asks for a clean stop, the second ends the process.

    The supervisor's ``stop`` (:meth:`request`) asks for the same stop without being counted.
    """

    def __init__(self) -> None:
        self.stop = asyncio.Event()
        self.signalled = False

    def __call__(self, signum: int) -> None:
        name = signal.Signals(signum).name
        if self.signalled:
            log.warning("second signal: exiting now", extra={"fields": {"signal": name}})
            exit_now(128 + signum)
        self.signalled = True
        self.request({"signal": name})

    def request(self, fields: dict[str, str]) -> None:
        """Start the clean stop (once), logging why."""
        if not self.stop.is_set():
            log.info("stopping", extra={"fields": fields})
            self.stop.set()

    def install(self) -> None:
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, self, signum)

    def remove(self) -> None:
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(signum)


async def _start(
    config: Config, worker: Worker | None
) -> tuple[web.AppRunner, list[web.BaseSite], RequestLog]:
    try:
        app, requests = build_app(config)
    except ScrapeEndpointError as exc:
        raise StartError(str(exc)) from exc
    except OSError as exc:
        raise StartError(f"cannot use data directory {config.server.data_dir}: {exc}") from exc
    if worker is not None:
        requests.worker = worker.index
    runner = web.AppRunner(
        app,
        access_log=None,
        handle_signals=False,
        shutdown_timeout=1.0,
        max_field_size=_header_limit(config),
    )
    try:
        await runner.setup()
    except (OSError, RuntimeError, sqlite3.Error, StoreUnavailableError) as exc:
        await runner.cleanup()
        raise StartError(_store_failure(exc, config)) from exc
    sites: list[web.BaseSite] = []
    if worker is not None:
        sites.extend(web.SockSite(runner, sock) for sock in worker.sockets)
    else:
        sites.append(web.TCPSite(runner, config.server.host, config.server.port))
    try:
        for site in sites:
            await site.start()
    except OSError as exc:
        await runner.cleanup()
        where = f"{config.server.host}:{config.server.port}"
        raise StartError(f"cannot listen on {where}: {exc.strerror or exc}") from exc
    return runner, sites, requests


def _header_limit(config: Config) -> int:
    """The ``max_field_size`` of aiohttp: ``max_header_bytes``, and room for the longest JWT.

    A token longer than ``max_token_bytes`` must reach the server to get its 401 (RFC 6750
    ``invalid_token``) rather than aiohttp's bare 400, so the field holds ``Bearer `` and it.
    """
    token = config.security.tokens.max_token_bytes + len("Bearer ")
    return max(config.settings.max_header_bytes, token + 1)


def _store_failure(exc: BaseException, config: Config) -> str:
    """Why the store did not open, never an empty text; for a SQLite file in use, what to do."""
    cause = exc.__cause__
    if config.server.storage == "sqlite" and isinstance(cause, BlockingIOError):
        return (
            f"the task database {config.server.database} is open in another process, most"
            " likely another a2a-wire serve on the same data directory (SQLite allows one);"
            " stop that one, or give this one its own --data-dir ([server] data_dir)"
        )
    busy = isinstance(cause, sqlite3.OperationalError) and (
        cause.sqlite_errorcode in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    )
    if busy and config.server.storage == "sqlite":
        waited = config.server.sqlite_busy_timeout_seconds
        return (
            f"the task database {config.server.database} is locked by another program's write"
            f" transaction (waited [server] sqlite_busy_timeout_seconds, {waited:g} s); end"
            " that transaction (a sqlite3 shell, a backup tool) and start again"
        )
    if isinstance(exc, StoreUnavailableError) and cause is not None:
        told = str(exc)
        detail = describe(cause)
        return f"cannot open the task store: {told if detail in told else f'{told} ({detail})'}"
    return f"cannot open the task store: {describe(exc)}"


def listening_url(addresses: Sequence[object], config: Config) -> str:
    """``http://host:port`` of the first TCP address (IPv6 in brackets), else the configured one.

    Args:
        addresses: Socket addresses (``getsockname()`` results, ``AppRunner.addresses``).
        config: The configuration, for the fallback.

    Returns:
        The URL for the ``listening`` log line.
    """
    for address in addresses:
        if isinstance(address, tuple):
            host, port = address[0], address[1]
            host = f"[{host}]" if ":" in str(host) else host
            return f"http://{host}:{port}"
    return f"http://{config.server.host}:{config.server.port}"


def store_label(config: Config) -> str:
    """Where the tasks are, for the ``listening`` line (never the DSN, which may hold a secret)."""
    storage = config.server.storage
    if storage == "sqlite":
        return str(config.server.database)
    if storage == "postgresql":
        return f"postgresql schema {config.postgresql.schema}"
    return storage


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


def _announce(runner: web.AppRunner, config: Config, worker: Worker | None) -> None:
    """The ``listening`` line, or for a worker ``worker ready`` and ``ready`` on its channel."""
    if worker is not None:
        log.info("worker ready", extra={"fields": {"worker": worker.index, "pid": os.getpid()}})
        try:
            worker.channel.send(READY)
        except OSError:  # the supervisor is gone: the channel watch stops this worker
            pass
        return
    fields = {
        "url": listening_url(runner.addresses, config),
        "store": store_label(config),
        "skills": ",".join(skill.id for skill in config.skills),
    }
    log.info("listening", extra={"fields": fields})


def _watch_channel(worker: Worker, signals: _Signals) -> None:
    """Stop on the supervisor's ``stop`` line or when the channel closes (it is gone)."""
    loop = asyncio.get_running_loop()
    channel = worker.channel
    channel.setblocking(False)

    def readable() -> None:
        try:
            data = channel.recv(64)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            loop.remove_reader(channel.fileno())
            signals.request({"reason": "supervisor gone", "pid": str(os.getpid())})
        elif STOP.strip() in data:
            signals.request({"reason": "supervisor", "pid": str(os.getpid())})

    loop.add_reader(channel.fileno(), readable)


async def serve(config: Config, worker: Worker | None = None) -> int:
    """Run the server of ``config`` until a signal stops it.

    Args:
        config: The checked configuration.
        worker: The sockets and the channel of a worker of ``serve --workers``; ``None`` for
            a server that binds its own address.

    Returns:
        The exit status: 0 after a clean stop.

    Raises:
        StartError: The server could not start.
    """
    runner, sites, requests = await _start(config, worker)
    app = runner.app
    signals = _Signals()
    signals.install()
    try:
        if worker is not None:
            _watch_channel(worker, signals)
        _announce(runner, config, worker)
        await signals.stop.wait()
        await _stop(runner, sites, requests, config.server.shutdown_grace_seconds)
    finally:
        signals.remove()
    log.info("stopped")
    stubborn = [run for run in app[RUNTIME_KEY].runs if not run.done()]
    if stubborn:  # they ignored cancellation: never let them run on against the closed store
        log.warning(
            "exiting without the agent runs that ignored cancellation",
            extra={"fields": {"runs": len(stubborn)}},
        )
        exit_now(0)
    return 0


def stopping_error(task_id: str, *, shared: bool) -> ProtocolError:
    """The last event of a stream still open when the server stops: what becomes of its task.

    On a shared store another process carries the task on, so the error is the retryable
    -32000 (:class:`~a2a_wire.errors.UnavailableError`, naming the task), which a resumable
    client follows to that process. On a store of this process alone nobody goes on with it,
    and the next start marks it FAILED: an -32603 that says so.
    """
    if shared:
        return UnavailableError(
            "This server process is stopping; another process of the shared store carries"
            " the task on: subscribe again",
            metadata={"taskId": task_id},
        )
    return InternalError(
        "The server is stopping with this task unfinished; its store is this process's alone,"
        " so the task will be FAILED when the server starts again"
    )


async def _stop(
    runner: web.AppRunner, sites: list[web.BaseSite], requests: RequestLog, grace: float
) -> None:
    """Steps 1 to 3 of the module docstring: refuse, drain, end streams, cancel, close."""
    app = runner.app
    requests.draining = True
    app[HEALTH_KEY].stop()  # not ready from now on
    for site in sites:
        await site.stop()
    await _drain(app, requests, grace)
    shared = isinstance(app[STORE_KEY], SharedTaskStore)
    for hub in list(app[RUNTIME_KEY].hubs.values()):
        hub.finish_all(stopping_error(hub.task_id, shared=shared))
    await runner.cleanup()
