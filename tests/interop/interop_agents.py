"""The a2a-wire agent the interop scenarios run, and the card it is served with.

The agent picks its behaviour from the text of the message's first part, the same script the
SDK's executor in :mod:`run_ours_vs_sdk_server` follows, so both directions run the same
operations:

=========== =================================================================================
``complete`` WORKING, one text artifact, COMPLETED with the status message ``done``
``reply``    a direct Message reply, no task
``gate``     WORKING, waits for :attr:`InteropAgent.gate`, one text artifact, COMPLETED
``hold``     WORKING, then waits until the task is canceled (CANCELED by :meth:`cancel`)
``input``    INPUT_REQUIRED with ``need more``; a follow-up adds an artifact and completes
``chunks``   WORKING, one artifact in two chunks (append, last chunk), COMPLETED
=========== =================================================================================

No module here imports the a2a-sdk: pytest imports this file, and the SDK registers the same
proto file as the codec oracle does (tests/generated/test_oracle.py).
"""

from __future__ import annotations

import asyncio

from a2a_wire.server import AgentExecutor, EventQueue, RequestContext, TaskUpdater
from a2a_wire.types import (
    AgentCapabilities,
    AgentCard,
    AgentSkill,
    Part,
)

SCRIPTS = ("complete", "reply", "gate", "hold", "input", "chunks")


def first_text(context: RequestContext) -> str:
    """The text of the request's first part ('' when there is none)."""
    message = context.message
    if message is None or not message.parts:
        return ""
    return message.parts[0].text or ""


class InteropAgent(AgentExecutor):
    """The scripted agent; see the module docstring."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.working = asyncio.Event()

    async def execute(self, context: RequestContext, events: EventQueue) -> None:
        text = first_text(context)
        updater = TaskUpdater(events, context)
        if context.task is not None:  # a follow-up to an interrupted task
            await updater.start_work()
            await updater.add_artifact(f"result of {text}", name="answer")
            await updater.complete("done")
            return
        if text == "reply":
            await events.enqueue_event(updater.new_message(f"reply to {text}"))
            return
        if text == "input":
            await updater.require_input("need more")
            return
        await updater.start_work()
        self.working.set()
        if text == "gate":
            await self.gate.wait()
        elif text == "hold":
            await asyncio.Event().wait()  # until canceled
        if text == "chunks":
            artifact_id = await updater.add_artifact("chunk-1 ", name="chunked")
            await updater.add_artifact(
                [Part(text="chunk-2")], artifact_id=artifact_id, append=True, last_chunk=True
            )
        else:
            await updater.add_artifact(f"result of {text}", name="answer")
        await updater.complete("done")

    async def cancel(self, context: RequestContext, events: EventQueue) -> None:
        await TaskUpdater(events, context).cancel("canceled on request")


def interop_card(*, push: bool = False, extended: bool = False) -> AgentCard:
    """The card of the interop server (its interface is filled in when served)."""
    return AgentCard(
        name="a2a-wire interop agent",
        description="Runs the interop scenarios",
        version="1.0.0",
        capabilities=AgentCapabilities(
            streaming=True,
            push_notifications=push or None,
            extended_agent_card=extended or None,
        ),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[
            AgentSkill(id="script", name="Script", description="Scripted replies", tags=["test"])
        ],
    )
