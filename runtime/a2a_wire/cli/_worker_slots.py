"""Parts of the ``serve --workers`` supervisor (:mod:`a2a_wire.cli._workers`): sockets, backoff.

:func:`bind` makes the listening sockets every worker shares; a :class:`Slot` is one of the N
places a worker runs in, through its restarts, and counts its quick exits; :func:`restart_delay`
turns that count into the wait before the next start.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
from dataclasses import dataclass

from a2a_wire.cli._serve import STOP

__all__ = [
    "BACKLOG",
    "RESTART_BASE_SECONDS",
    "RESTART_CAP_SECONDS",
    "STABLE_SECONDS",
    "Slot",
    "bind",
    "exit_status",
    "restart_delay",
]

RESTART_BASE_SECONDS = 0.5
"""Wait before restarting a worker after its first failure in a row."""

RESTART_CAP_SECONDS = 30.0
"""Longest wait before restarting a worker."""

STABLE_SECONDS = 10.0
"""A worker that served this long and then exited is restarted at once."""

BACKLOG = 128
"""Listen backlog of the shared sockets (aiohttp's own default)."""


def restart_delay(failures: int) -> float:
    """Seconds to wait before restarting a worker after ``failures`` quick exits in a row.

    Args:
        failures: Exits in a row of a worker that served less than :data:`STABLE_SECONDS`.

    Returns:
        0 for none; else :data:`RESTART_BASE_SECONDS` doubled per failure after the first, at
        most :data:`RESTART_CAP_SECONDS`.
    """
    if failures <= 0:
        return 0.0
    return min(RESTART_CAP_SECONDS, RESTART_BASE_SECONDS * 2.0 ** min(failures - 1, 32))


def bind(host: str, port: int) -> list[socket.socket]:
    """Listening sockets on every address ``host`` resolves to (port ``0``: one free port).

    Args:
        host: Name or address (``""``: every interface).
        port: Port, or 0.

    Returns:
        The sockets, listening, one per address.

    Raises:
        OSError: The name does not resolve, or an address cannot be bound.
    """
    infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    sockets: list[socket.socket] = []
    try:
        for family, kind, proto, _, address in dict.fromkeys(infos):
            sock = socket.socket(family, kind, proto)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:  # as asyncio does: one family per socket
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            if port == 0 and len(sockets) > 1:  # the port the first one got, on every address
                address = (address[0], sockets[0].getsockname()[1], *address[2:])
            sock.bind(address)
            sock.listen(BACKLOG)
    except OSError:
        for sock in sockets:
            sock.close()
        raise
    return sockets


def exit_status(code: int) -> str:
    """An exit code as logged: ``0``, ``1``, or the signal's name."""
    if code < 0:
        with contextlib.suppress(ValueError):
            return signal.Signals(-code).name
    return str(code)


@dataclass
class Slot:
    """One of the N places a worker runs in, through its restarts."""

    index: int
    proc: asyncio.subprocess.Process | None = None
    channel: socket.socket | None = None
    ready_at: float | None = None
    failures: int = 0
    code: int | None = None

    def tell_stop(self) -> None:
        """Ask the worker to stop (the line waits in the channel until it reads it)."""
        if self.channel is not None:
            with contextlib.suppress(OSError):
                self.channel.send(STOP)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.returncode is None

    def exited(self, now: float) -> float:
        """Note the exit (a quick one is a failure); return the wait before the restart."""
        served = None if self.ready_at is None else now - self.ready_at
        stable = served is not None and served >= STABLE_SECONDS
        self.failures = 0 if stable else self.failures + 1
        if self.proc is not None:
            self.code = self.proc.returncode
        self.proc, self.ready_at = None, None
        if self.channel is not None:
            self.channel.close()
            self.channel = None
        return restart_delay(self.failures)
