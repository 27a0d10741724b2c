"""``python -m supervisor_main CONFIG N``: the ``serve --workers`` supervisor on any storage.

The command refuses ``--workers`` above 1 unless the storage is PostgreSQL; the tests of the
supervisor's own mechanics (the shared socket, restarts, signals) run it here on memory storage,
where each worker keeps its own tasks, which those tests never read across workers. It exits as
``serve`` does: the supervisor's status, or 1 with ``error: cannot start: ...``.

``STABLE_SECONDS_VARIABLE`` sets how long a worker must serve to count as stable (its restart
then waits for nothing): the tests set it far beyond their run, so a worker that a busy machine
kept alive for long still counts as failing fast.
"""

from __future__ import annotations

import asyncio
import os
import sys

from a2a_wire.cli import _worker_slots
from a2a_wire.cli._logging import configure_logging
from a2a_wire.cli._serve import StartError
from a2a_wire.cli._skills import EchoSkill
from a2a_wire.cli._workers import supervise
from a2a_wire.cli.config import load
from a2a_wire.server import AgentExecutor


def refused_in_workers() -> AgentExecutor:
    """An executor factory (``supervisor_main:refused_in_workers``) that fails in a worker.

    The supervisor's own check of the configuration builds it; a worker's fails, so the worker
    exits before it is ready.
    """
    if "--worker-fds" in sys.argv:
        raise RuntimeError("this executor refuses to run in a worker")
    return EchoSkill()


STABLE_SECONDS_VARIABLE = "A2A_WIRE_TEST_STABLE_SECONDS"


def main() -> None:
    """Load the configuration, log as ``serve`` does, and supervise N workers."""
    if STABLE_SECONDS_VARIABLE in os.environ:
        _worker_slots.STABLE_SECONDS = float(os.environ[STABLE_SECONDS_VARIABLE])
    path, workers = sys.argv[1], int(sys.argv[2])
    config = load(path)
    configure_logging(config.server.log_level, config.server.log_format)
    try:
        code = asyncio.run(supervise(config, workers, ["--config", path]))
    except StartError as exc:
        print(f"error: cannot start: {exc}", file=sys.stderr)
        code = 1
    sys.exit(code)


if __name__ == "__main__":
    main()
