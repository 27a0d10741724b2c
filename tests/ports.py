"""Ports on 127.0.0.1 for the servers and clusters a test starts, each pytest process in a range
of its own.

A port is chosen by binding it and letting it go, so another process could take it before the
test's server binds it. Under pytest-xdist the workers would race for the same kernel-chosen
ports, and a port the kernel picks for one worker may be the port of a throwaway PostgreSQL
cluster that another worker's fault test has stopped for a while. So each worker takes its
ports in turn from its own slice of a range below the kernel's ephemeral ports (Linux's
``ip_local_port_range`` starts at 32768), which no connection and no ``bind(port 0)`` uses; a
port is handed out again only after the whole slice has gone round. The slice starts at a
random place, so that a second test run on the machine (another checkout) rarely walks the
same ports at the same time.
"""

from __future__ import annotations

import errno
import itertools
import os
import random
import socket

FIRST, END = 20000, 32000
"""The ports the workers share out (end excluded): below Linux's ephemeral range."""


def _slice() -> range:
    """This process's ports: the whole range alone, else the xdist worker's share of it."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")  # "gw0", "gw1", ...; unset without -n
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    index = int(worker[2:]) if worker.startswith("gw") else 0
    size = (END - FIRST) // max(count, 1)
    return range(FIRST + index * size, FIRST + (index + 1) * size)


_PORTS = _slice()
_TURN = itertools.count(random.randrange(len(_PORTS)))


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now, of this process's slice.

    Raises:
        OSError: every port of the slice is taken.
    """
    for _ in range(len(_PORTS)):
        port = _PORTS[next(_TURN) % len(_PORTS)]
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError as exc:
                if exc.errno != errno.EADDRINUSE:
                    raise
                continue
        return port
    raise OSError(errno.EADDRINUSE, f"no free port in {_PORTS.start}-{_PORTS.stop - 1}")
