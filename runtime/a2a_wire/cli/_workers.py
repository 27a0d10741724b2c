"""``a2a-wire serve --workers N``: N server processes on one address, kept running by a supervisor.

The supervisor binds the address and the workers inherit one shared listening socket (chosen
over ``SO_REUSEPORT``, which resets the connections queued on a dead worker's socket); each
worker has a channel to the supervisor whose closing stops it, so no orphan serves on. What a
user sees: docs/scale-out.md; theory of operation: docs/internals/cli.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence

from a2a_wire._aio import wait_set
from a2a_wire.cli._app import page_token_key
from a2a_wire.cli._serve import READY, StartError, exit_now, listening_url, store_label
from a2a_wire.cli._worker_slots import Slot, bind, exit_status
from a2a_wire.cli.config._load import Config

__all__ = ["STOP_MARGIN_SECONDS", "Supervisor", "refusal", "supervise"]

log = logging.getLogger("a2a_wire.serve.workers")

STOP_MARGIN_SECONDS = 5.0
"""Added to twice the shutdown grace before the supervisor kills the workers still stopping."""


def refusal(config: Config, workers: int) -> str | None:
    """Why ``workers`` processes cannot share the configured storage, or ``None``.

    Args:
        config: The checked configuration.
        workers: The ``--workers`` value.

    Returns:
        The message for the command to print (it exits 6), or ``None`` when they can.
    """
    storage = config.server.storage
    if workers > 1 and config.telemetry.prometheus_port:
        return (
            f"--workers {workers} with [telemetry] prometheus_port: one port cannot be scraped"
            " for every worker. Run one process, or export over OTLP ([telemetry] endpoint)"
        )
    if workers <= 1 or storage == "postgresql":
        return None
    why = (
        "one process owns the SQLite task database"
        if storage == "sqlite"
        else "memory storage keeps the tasks inside one process"
    )
    return (
        f'--workers {workers} needs storage = "postgresql" in [server]; with storage = '
        f'"{storage}", {why}. Run one process, or see docs/scale-out.md'
    )


class Supervisor:
    """Runs ``workers`` worker processes on one address until a signal stops them.

    Args:
        config: The checked configuration (its ``[server]`` host and port are bound here).
        workers: How many worker processes.
        args: The ``serve`` arguments every worker gets (``--config``, the overrides).
    """

    def __init__(self, config: Config, workers: int, args: Sequence[str]) -> None:
        self.config = config
        self.args = list(args)
        self.slots = [Slot(index) for index in range(1, workers + 1)]
        self.sockets: list[socket.socket] = []
        self.signalled = False
        self._stopping: asyncio.Event | None = None

    @property
    def stopping(self) -> asyncio.Event:
        if self._stopping is None:
            self._stopping = asyncio.Event()
        return self._stopping

    async def run(self) -> int:
        """Start the workers, keep them running, stop them on a signal.

        Returns:
            0 when every worker stopped cleanly, else 1.

        Raises:
            StartError: The address cannot be bound, the data directory is unusable, or a
                worker exited before it was ready during the first start.
        """
        self._prepare()
        loop = asyncio.get_running_loop()
        try:
            for signum in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(signum, self._on_signal, signum)
            try:
                await self._start_all()
                keepers = [asyncio.create_task(self._keep(slot)) for slot in self.slots]
                await self.stopping.wait()
                return await self._stop_all(keepers)
            finally:
                for signum in (signal.SIGTERM, signal.SIGINT):
                    loop.remove_signal_handler(signum)
        finally:
            for sock in self.sockets:
                sock.close()

    def _prepare(self) -> None:
        """The page-token key (one for every worker), then the listening sockets."""
        server = self.config.server
        if server.storage != "memory":
            try:
                server.data_dir.mkdir(parents=True, exist_ok=True)
                page_token_key(server.data_dir)
            except OSError as exc:
                raise StartError(f"cannot use data directory {server.data_dir}: {exc}") from exc
        try:
            self.sockets = bind(server.host, server.port)
        except OSError as exc:
            where = f"{server.host}:{server.port}"
            raise StartError(f"cannot listen on {where}: {exc.strerror or exc}") from exc

    async def _start_all(self) -> None:
        """Start every worker and wait until each is ready (or the stop was asked for)."""
        ready = await asyncio.gather(*(self._launch(slot) for slot in self.slots))
        if self.stopping.is_set() or all(ready):
            if not self.stopping.is_set():
                self._listening()
            return
        failed = next(slot for slot, ok in zip(self.slots, ready, strict=True) if not ok)
        code = await failed.proc.wait() if failed.proc is not None else 1
        self.stopping.set()
        for slot in self.slots:
            slot.tell_stop()
        for slot in self.slots:
            if slot.proc is not None:
                self._log_exit(slot, await slot.proc.wait())
        raise StartError(f"worker {failed.index} exited ({exit_status(code)}) before it was ready")

    def _listening(self) -> None:
        addresses = [sock.getsockname() for sock in self.sockets]
        fields = {
            "url": listening_url(addresses, self.config),
            "store": store_label(self.config),
            "skills": ",".join(skill.id for skill in self.config.skills),
            "workers": len(self.slots),
        }
        log.info("listening", extra={"fields": fields})

    async def _launch(self, slot: Slot) -> bool:
        """Start the slot's worker; ``True`` once it is ready, ``False`` if it exits first."""
        if self.stopping.is_set():
            return False
        ours, theirs = socket.socketpair()
        slot.channel = ours
        fds = [sock.fileno() for sock in self.sockets] + [theirs.fileno()]
        command = [sys.executable, "-m", "a2a_wire", "serve", *self.args]
        command += ["--worker-fds", ",".join(str(fd) for fd in fds)]
        command += ["--worker-index", str(slot.index)]
        try:
            slot.proc = await asyncio.create_subprocess_exec(
                *command, pass_fds=fds, stdin=subprocess.DEVNULL, process_group=0
            )
        except OSError as exc:
            log.error("cannot start a worker", extra={"fields": {"error": str(exc)}})
            return False
        finally:
            theirs.close()
        log.info("worker started", extra={"fields": {"worker": slot.index, "pid": slot.proc.pid}})
        if self.stopping.is_set():  # the stop came while it was being started
            slot.tell_stop()
        ours.setblocking(False)
        answer = b""
        with contextlib.suppress(OSError):
            answer = await asyncio.get_running_loop().sock_recv(ours, len(READY))
        if not answer.startswith(READY.strip()):
            return False
        slot.ready_at = time.monotonic()
        return True

    async def _keep(self, slot: Slot) -> None:
        """Wait for the slot's worker to exit; restart it (after the backoff) unless stopping."""
        while True:
            if slot.proc is not None:
                self._log_exit(slot, await slot.proc.wait())
            delay = slot.exited(time.monotonic())
            if self.stopping.is_set():
                return
            if delay:
                fields = {"worker": slot.index, "in_seconds": delay}
                log.info("worker restarting", extra={"fields": fields})
                if await wait_set(self.stopping, delay):
                    return
            await self._launch(slot)

    def _log_exit(self, slot: Slot, code: int) -> None:
        quiet = self.stopping.is_set() and code == 0
        assert slot.proc is not None
        fields = {"worker": slot.index, "pid": slot.proc.pid, "status": exit_status(code)}
        log.log(
            logging.INFO if quiet else logging.WARNING, "worker exited", extra={"fields": fields}
        )

    def _on_signal(self, signum: int) -> None:
        name = signal.Signals(signum).name
        if self.signalled:
            log.warning("second signal: killing the workers", extra={"fields": {"signal": name}})
            self._kill_all()
            exit_now(128 + signum)
        self.signalled = True
        live = sum(slot.alive() for slot in self.slots)
        log.info("stopping", extra={"fields": {"signal": name, "workers": live}})
        self.stopping.set()
        for slot in self.slots:
            slot.tell_stop()

    def _kill_all(self) -> None:
        """SIGKILL every worker and reap it, so that none outlives the supervisor."""
        for slot in self.slots:
            if slot.alive():
                assert slot.proc is not None
                with contextlib.suppress(ProcessLookupError):
                    slot.proc.kill()
        for slot in self.slots:
            if slot.proc is not None and slot.proc.returncode is None:
                with contextlib.suppress(ChildProcessError):  # the child watcher reaped it
                    os.waitpid(slot.proc.pid, 0)

    async def _stop_all(self, keepers: list[asyncio.Task[None]]) -> int:
        """Wait for the workers to drain; kill those still running after the deadline."""
        limit = 2 * self.config.server.shutdown_grace_seconds + STOP_MARGIN_SECONDS
        _, pending = await asyncio.wait(keepers, timeout=limit)
        if pending:
            log.warning(
                "workers still stopping: killing them", extra={"fields": {"workers": len(pending)}}
            )
            for slot in self.slots:
                if slot.alive():
                    assert slot.proc is not None
                    slot.proc.kill()
            await asyncio.wait(pending)
        codes = [slot.code for slot in self.slots if slot.code is not None]
        log.info("stopped")
        return 0 if all(code == 0 for code in codes) else 1


async def supervise(config: Config, workers: int, args: Sequence[str]) -> int:
    """Run ``workers`` processes of the server of ``config`` on its address (docs/internals/cli.md).

    Args:
        config: The checked configuration.
        workers: How many worker processes (at least 1).
        args: The ``serve`` arguments each worker gets.

    Returns:
        The exit status: 0 after a clean stop of every worker, 1 otherwise.

    Raises:
        StartError: The supervisor or a first worker could not start.
    """
    return await Supervisor(config, workers, args).run()
