"""a2a_wire executors of the benchmarks, importable by ``a2a-wire serve`` as ``_agents:NAME``.

benchmarks/_servers.py builds its servers on these with ``create_app``; the PostgreSQL cells of
benchmarks/scale_send.py and both sides of benchmarks/scale_latency.py run ``a2a-wire serve``
with a ``[[skills]]`` table naming them (``executor = "_agents:TrivialAgent"``, with
``benchmarks/`` on ``PYTHONPATH``), so that the measured server is the one users run.

* :class:`TrivialAgent`: one text artifact ``done``, then COMPLETED.
* :class:`ChunkAgent`: one artifact of N chunks (N is the message's text), then COMPLETED.
* :class:`TickAgent`: the steady event source of benchmarks/scale_latency.py (_ticks.py).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from _servers import ARTIFACT_TEXT, chunk_text
from _ticks import TICKS_ARTIFACT, parse_ticks, sleep_until, tick_schedule, tick_text, wait_gate

from a2a_wire.server import AgentExecutor, EventQueue, RequestContext, TaskUpdater


class TrivialAgent(AgentExecutor):
    """Adds one text artifact, ``done``, and completes the task."""

    async def execute(self, context: RequestContext, events: EventQueue) -> None:
        updater = TaskUpdater(events, context)
        await updater.add_artifact(ARTIFACT_TEXT)
        await updater.complete()


class ChunkAgent(AgentExecutor):
    """Streams one artifact of N chunks of 32 bytes (N: the message's text), then completes."""

    async def execute(self, context: RequestContext, events: EventQueue) -> None:
        assert context.message is not None
        n = int(context.message.parts[0].text or "0")
        updater = TaskUpdater(events, context)
        for i in range(n):
            await updater.add_artifact(
                chunk_text(i), artifact_id="out", append=i > 0, last_chunk=i == n - 1
            )
            await asyncio.sleep(0)  # as an agent awaiting its model's next token would
        await updater.complete()


class TickAgent(AgentExecutor):
    """Emits N artifact chunks at a steady rate once the benchmark opens its gate (_ticks.py).

    Args:
        gate_dir: The folder of the gate files.
    """

    def __init__(self, gate_dir: str) -> None:
        self._gates = Path(gate_dir)

    async def execute(self, context: RequestContext, events: EventQueue) -> None:
        assert context.message is not None
        count, interval = parse_ticks(context.message.parts[0].text or "")
        updater = TaskUpdater(events, context)
        await updater.start_work()
        if not await wait_gate(self._gates / context.task_id):
            await updater.fail("the benchmark never opened the gate")
            return
        for i, instant in enumerate(tick_schedule(count, interval)):
            await sleep_until(instant)
            await updater.add_artifact(
                tick_text(i),
                artifact_id=TICKS_ARTIFACT,
                append=i > 0,
                last_chunk=i == count - 1,
            )
        await updater.complete()
