"""The a2a-wire agent the interop scenarios run, and the card it is served with.

The agent picks its behaviour from the text of the message's first part, the same script the
SDK's executor in :mod:`run_ours_vs_sdk_server` follows, so both directions run the same
operations:

============= ===============================================================================
``complete``  WORKING, one text artifact, COMPLETED with the status message ``done``
``reply``     a direct Message reply, no task
``gate``      WORKING, waits for :attr:`InteropAgent.gate`, one text artifact, COMPLETED
``hold``      WORKING, then waits until the task is canceled (CANCELED by :meth:`cancel`)
``input``     INPUT_REQUIRED with ``need more``; a follow-up adds an artifact and completes
``chunks``    WORKING, one artifact in two chunks (append, last chunk), COMPLETED
``ask-input`` a conversation of three turns: WORKING, INPUT_REQUIRED (:data:`QUESTIONS`); the
              first follow-up asks again; the second adds ``hello, <both answers>`` and completes
``ask-auth``  the same conversation with AUTH_REQUIRED (:data:`SIGN_INS`)
============= ===============================================================================

The ``ask-*`` scripts are the a2a-sdk client's conversations (``run_sdk_client_turns.py``); the
other direction runs an executor of the SDK's own idiom (``run_sdk_turns.py``).

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
    Role,
    Task,
    TaskState,
)

SCRIPTS = ("complete", "reply", "gate", "hold", "input", "chunks", "ask-input", "ask-auth")
QUESTIONS = ("What is your name?", "And your family name?")
SIGN_INS = ("Please sign in to go on.", "That sign-in has expired; please sign in again.")
ASKS = {
    "ask-input": (TaskState.INPUT_REQUIRED, QUESTIONS),
    "ask-auth": (TaskState.AUTH_REQUIRED, SIGN_INS),
}


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
            if await self.converse(context.task, updater):
                return
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
        if text in ASKS:
            state, asked = ASKS[text]
            await updater.update_status(state, asked[0])
            return
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

    @staticmethod
    async def converse(task: Task, updater: TaskUpdater) -> bool:
        """The follow-up turns of an ``ask-*`` script; ``False`` for any other task."""
        said = [m.parts[0].text or "" for m in task.history if m.role == Role.USER and m.parts]
        if not said or said[0] not in ASKS:
            return False
        if len(said) == 2:
            state, asked = ASKS[said[0]]
            await updater.update_status(state, asked[1])
            return True
        await updater.add_artifact(f"hello, {' '.join(said[1:])}", name="greeting")
        await updater.complete("done")
        return True


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
