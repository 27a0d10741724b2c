"""The agent of the three-process tests (tests/cli/test_serve_scale_out.py): it says where it runs.

``scale_agents:ScaleAgent`` with the options ``name`` (which process this is) and ``folder`` (a
folder the test and every process share). Files in it are the only signals between the test and
the agents; the test waits for them, never for a time (STYLE.md section 9):

========== ==================================================================================
``hold``   WORKING, the first of :data:`CHUNKS` chunks of one artifact, then writes
           ``held/<task id>`` and waits until ``go/<task id>`` exists; then the other chunks,
           COMPLETED
``stuck``  WORKING, writes ``held/<task id>``, then waits until the run is cancelled, which it
           records in ``stopped/<task id>`` (so the test sees the run stopped, in its process)
``ask``    INPUT_REQUIRED; a follow-up completes the task with the artifact ``served by <name>``
========== ==================================================================================

Its cancel hook records CANCELED with the status message ``canceled in <name>``.

Every marker file holds the ``name`` of the process that wrote it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from e2e_support import until_exists, write_atomically

from a2a_wire.server import AgentExecutor, EventQueue, RequestContext, TaskUpdater

CHUNKS = 40
"""Chunks of a ``hold`` task's artifact."""


class ScaleAgent(AgentExecutor):
    """See the module docstring.

    Args:
        name: Which process this is, written into every marker and answer.
        folder: The folder of the markers, shared with the test.
    """

    def __init__(self, name: str, folder: str) -> None:
        self.name = name
        self.folder = Path(folder)

    def _mark(self, kind: str, task_id: str) -> None:
        (self.folder / kind).mkdir(exist_ok=True)
        write_atomically(self.folder / kind / task_id, self.name)

    async def execute(self, context: RequestContext, events: EventQueue) -> None:
        assert context.message is not None
        updater = TaskUpdater(events, context)
        if context.task is not None:  # a follow-up of "ask"
            await updater.start_work()
            await updater.add_artifact(f"served by {self.name}", name="answer")
            await updater.complete()
            return
        text = context.message.parts[0].text or ""
        if text == "ask":
            await updater.require_input("what else?")
            return
        await updater.start_work()
        if text == "stuck":
            self._mark("held", context.task_id)
            try:
                await asyncio.Event().wait()
            finally:
                self._mark("stopped", context.task_id)
        artifact_id = ""
        for i in range(CHUNKS):
            artifact_id = await updater.add_artifact(
                f"{i:03d}", artifact_id=artifact_id, append=i > 0, last_chunk=i == CHUNKS - 1
            )
            if i == 0:
                self._mark("held", context.task_id)
                await until_exists(self.folder / "go" / context.task_id)
        await updater.complete()

    async def cancel(self, context: RequestContext, events: EventQueue) -> None:
        await TaskUpdater(events, context).cancel(f"canceled in {self.name}")
