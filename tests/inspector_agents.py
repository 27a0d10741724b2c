"""Executors for the inspector's browser tests, named in a serve configuration as
``inspector_agents:NAME`` (tests/ is on the subprocess's PYTHONPATH).

The test holds an agent with a *gate*: a file the agent waits for, which the test creates when
it has seen what it wanted. The agent checks for the file every 20 ms; the test never waits for
a time to pass, only for a condition.

=============  ================================================================================
``Ask``        INPUT_REQUIRED with the question "What is your name?"; the follow-up completes the
               task with the artifact ``greeting`` = ``Hello, <answer>!``
``Interview``  three turns of one task: INPUT_REQUIRED "What is your name?", then AUTH_REQUIRED
               "Sign in to continue, <name>.", then the artifact ``welcome`` = ``Welcome, <name>!``
               and COMPLETED
``Steps``      one artifact ``steps`` whose chunks are the words of the text; the first chunk comes
               at once, chunk ``i`` once the file ``<gate_dir>/<first word>-<i>`` exists; COMPLETED
``Hold``       WORKING "holding", then waits for ``<gate_dir>/<text>`` (or a cancel); COMPLETED
``Flood``      ``count`` artifact chunks as fast as the server takes them, then COMPLETED
=============  ================================================================================
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from a2a_wire.server import AgentExecutor, EventQueue, RequestContext, TaskUpdater


async def wait_for_file(path: Path) -> None:
    """Return once ``path`` exists (the test's gate)."""
    while not path.exists():
        await asyncio.sleep(0.02)


def _text(context: RequestContext) -> str:
    assert context.message is not None
    return " ".join(part.text for part in context.message.parts if part.text is not None)


class Ask(AgentExecutor):
    async def execute(self, context: RequestContext, events: EventQueue) -> None:
        updater = TaskUpdater(events, context)
        if context.task is None:
            await updater.require_input("What is your name?")
            return
        await updater.start_work("Thinking about it")
        await updater.add_artifact(f"Hello, {_text(context)}!", name="greeting")
        await updater.complete("Greeted")


class Interview(AgentExecutor):
    def __init__(self) -> None:
        self.names: dict[str, str] = {}  # task id -> the name of its second turn

    async def execute(self, context: RequestContext, events: EventQueue) -> None:
        updater = TaskUpdater(events, context)
        if context.task is None:
            await updater.require_input("What is your name?")
            return
        if context.task_id not in self.names:
            self.names[context.task_id] = _text(context)
            await updater.start_work("Checking")
            await updater.require_auth(f"Sign in to continue, {_text(context)}.")
            return
        await updater.start_work("Welcoming")
        await updater.add_artifact(f"Welcome, {self.names[context.task_id]}!", name="welcome")
        await updater.complete("Done")


class Steps(AgentExecutor):
    def __init__(self, gate_dir: str) -> None:
        self.gate_dir = Path(gate_dir)

    async def execute(self, context: RequestContext, events: EventQueue) -> None:
        updater = TaskUpdater(events, context)
        words = _text(context).split()
        await updater.start_work(f"{len(words)} steps")
        artifact_id = ""
        for index, word in enumerate(words):
            if index:
                await wait_for_file(self.gate_dir / f"{words[0]}-{index}")
            artifact_id = await updater.add_artifact(
                word if not index else " " + word,
                artifact_id=artifact_id,
                name="steps",
                append=index > 0,
                last_chunk=index == len(words) - 1,
            )
        await updater.complete()


class Hold(AgentExecutor):
    def __init__(self, gate_dir: str) -> None:
        self.gate_dir = Path(gate_dir)

    async def execute(self, context: RequestContext, events: EventQueue) -> None:
        updater = TaskUpdater(events, context)
        await updater.start_work("holding")
        await wait_for_file(self.gate_dir / _text(context))
        await updater.add_artifact("released", name="result")
        await updater.complete()


class Flood(AgentExecutor):
    def __init__(self, count: int = 10_000) -> None:
        self.count = count

    async def execute(self, context: RequestContext, events: EventQueue) -> None:
        updater = TaskUpdater(events, context)
        await updater.start_work(f"{self.count} chunks")
        artifact_id = ""
        for index in range(self.count):
            artifact_id = await updater.add_artifact(
                f"{index} ",
                artifact_id=artifact_id,
                name="flood",
                append=index > 0,
                last_chunk=index == self.count - 1,
            )
        await updater.complete()
