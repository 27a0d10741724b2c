"""An agent for the public A2A conformance kit (a2a-tck), on the a2a-wire executor API.

The kit drives the agent under test by the prefix of ``message.messageId``; the longest prefix
that matches wins (``tck-artifact-file-url`` before ``tck-artifact-file``). What each prefix
does is the table :data:`BEHAVIOURS`; anything else completes the task with an agent message
that echoes the message id.

The card (:func:`conformance_card`) declares streaming and push notifications, serves JSON-RPC
at the root path ``/``, and lists the extension :data:`REQUIRED_EXTENSION` with
``required: true``, so a SendMessage whose ``A2A-Extensions`` header lacks it gets -32008
(spec 3.3.4). The kit's webhook receiver listens on ``http://localhost:<port>/webhook``, so
:func:`conformance_push_settings` allows plain ``http`` and loopback addresses for webhooks;
the library's defaults allow neither.

Run it directly (``python examples/conformance_agent.py --port 9999``) or through the CLI
(``a2a-wire serve --config examples/conformance.toml``).
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from a2a_wire.netguard import AddressPolicy
from a2a_wire.server import (
    AgentExecutor,
    EventQueue,
    RequestContext,
    ServerSettings,
    TaskUpdater,
    agent_message,
    create_app,
)
from a2a_wire.server.push import PushSettings
from a2a_wire.server.store import EventLogStore
from a2a_wire.types import (
    AgentCapabilities,
    AgentCard,
    AgentExtension,
    AgentSkill,
    Part,
)

__all__ = [
    "BEHAVIOURS",
    "REQUIRED_EXTENSION",
    "ConformanceAgent",
    "conformance_app",
    "conformance_card",
    "conformance_push_settings",
    "match_prefix",
]

REQUIRED_EXTENSION = "urn:a2a:tck:required-extension"
"""The extension the card marks ``required``; requests must name it in ``A2A-Extensions``."""

FILE_BYTES = b"tck"
FILE_NAME = "output.txt"
FILE_URL = "https://example.com/output.txt"
TEXT_PLAIN = "text/plain"
RESUBSCRIBE_HOLD_SECONDS = 4.0
"""How long ``test-resubscribe-message-id`` stays WORKING (the kit resubscribes meanwhile)."""

Behaviour = Callable[["ConformanceAgent", RequestContext, EventQueue, TaskUpdater], Awaitable[None]]


def file_part() -> Part:
    """The raw file part the kit checks: the bytes ``tck`` as ``output.txt``, text/plain."""
    return Part(raw=FILE_BYTES, media_type=TEXT_PLAIN, filename=FILE_NAME)


def _artifact_then_complete(*parts: Part, working: bool = False) -> Behaviour:
    async def run(
        agent: ConformanceAgent, context: RequestContext, events: EventQueue, task: TaskUpdater
    ) -> None:
        if working:
            await task.start_work()
        await task.add_artifact(list(parts))
        await task.complete()

    return run


async def _complete_task(
    agent: ConformanceAgent, context: RequestContext, events: EventQueue, task: TaskUpdater
) -> None:
    # A follow-up to an existing (interrupted) task lands here too and completes that task.
    await task.complete("Hello from TCK")


async def _message_response(
    agent: ConformanceAgent, context: RequestContext, events: EventQueue, task: TaskUpdater
) -> None:
    await events.enqueue_event(
        agent_message("Direct message response", context_id=context.context_id)
    )


async def _input_required(
    agent: ConformanceAgent, context: RequestContext, events: EventQueue, task: TaskUpdater
) -> None:
    # A follow-up with the same prefix repeats INPUT_REQUIRED, so the task stays there.
    await task.require_input("Input required")


async def _reject(
    agent: ConformanceAgent, context: RequestContext, events: EventQueue, task: TaskUpdater
) -> None:
    await task.reject("rejected")


async def _complete_at_once(
    agent: ConformanceAgent, context: RequestContext, events: EventQueue, task: TaskUpdater
) -> None:
    await task.complete()


async def _chunked(
    agent: ConformanceAgent, context: RequestContext, events: EventQueue, task: TaskUpdater
) -> None:
    await task.start_work()
    # The kit expects the first chunk with append too: name the artifact's id up front.
    artifact_id = f"chunked-{context.task_id}"
    await task.add_artifact("chunk-1 ", artifact_id=artifact_id, append=True)
    await task.add_artifact("chunk-2", artifact_id=artifact_id, append=True, last_chunk=True)
    await task.complete()


async def _hold_then_complete(
    agent: ConformanceAgent, context: RequestContext, events: EventQueue, task: TaskUpdater
) -> None:
    await task.start_work()
    await asyncio.sleep(agent.resubscribe_hold_seconds)
    await task.complete()


async def _echo_message_id(
    agent: ConformanceAgent, context: RequestContext, events: EventQueue, task: TaskUpdater
) -> None:
    message_id = context.message.message_id if context.message is not None else ""
    await task.complete(f"Received message {message_id}")


BEHAVIOURS: dict[str, Behaviour] = {
    "tck-complete-task": _complete_task,
    "tck-artifact-text": _artifact_then_complete(Part(text="Generated text content")),
    "tck-artifact-file-url": _artifact_then_complete(
        Part(url=FILE_URL, media_type=TEXT_PLAIN, filename=FILE_NAME)
    ),
    "tck-artifact-file": _artifact_then_complete(file_part()),
    "tck-artifact-data": _artifact_then_complete(Part(data={"key": "value", "count": 42})),
    "tck-message-response": _message_response,
    "tck-input-required": _input_required,
    "tck-reject-task": _reject,
    "tck-stream-001": _artifact_then_complete(Part(text="Stream hello from TCK"), working=True),
    "tck-stream-002": _complete_at_once,
    "tck-stream-003": _artifact_then_complete(Part(text="Stream task lifecycle"), working=True),
    "tck-stream-ordering-001": _artifact_then_complete(Part(text="Ordered output"), working=True),
    "tck-stream-artifact-text": _artifact_then_complete(
        Part(text="Streamed text content"), working=True
    ),
    "tck-stream-artifact-file": _artifact_then_complete(file_part(), working=True),
    "tck-stream-artifact-chunked": _chunked,
    "test-resubscribe-message-id": _hold_then_complete,
}
"""What the agent does for each message id prefix (the kit's routing table)."""


def match_prefix(message_id: str) -> str | None:
    """The longest prefix of :data:`BEHAVIOURS` that ``message_id`` starts with, if any.

    Args:
        message_id: The incoming ``message.messageId``.

    Returns:
        The matching prefix, or ``None`` when none matches.
    """
    matches = [prefix for prefix in BEHAVIOURS if message_id.startswith(prefix)]
    return max(matches, key=len) if matches else None


class ConformanceAgent(AgentExecutor):
    """Routes each message to its behaviour by message id prefix (see :data:`BEHAVIOURS`).

    Args:
        resubscribe_hold_seconds: How long ``test-resubscribe-message-id`` stays WORKING.
    """

    def __init__(self, resubscribe_hold_seconds: float = RESUBSCRIBE_HOLD_SECONDS) -> None:
        self.resubscribe_hold_seconds = resubscribe_hold_seconds

    async def execute(self, context: RequestContext, events: EventQueue) -> None:
        """Run the behaviour the message id selects.

        Args:
            context: The request.
            events: Where the task's events (or the direct reply) go.
        """
        message_id = context.message.message_id if context.message is not None else ""
        prefix = match_prefix(message_id)
        behaviour = BEHAVIOURS[prefix] if prefix is not None else _echo_message_id
        await behaviour(self, context, events, TaskUpdater(events, context))

    async def cancel(self, context: RequestContext, events: EventQueue) -> None:
        """Record the task as CANCELED.

        Args:
            context: The task to cancel.
            events: Where the CANCELED status goes.
        """
        await TaskUpdater(events, context).cancel("canceled")


def conformance_card() -> AgentCard:
    """The agent card the kit reads: streaming, push, and one required extension.

    Returns:
        The card (its JSON-RPC interface is added when it is served).
    """
    capabilities = AgentCapabilities(
        streaming=True,
        push_notifications=True,
        extensions=[
            AgentExtension(
                uri=REQUIRED_EXTENSION,
                description="Required by the conformance kit's extension tests",
                required=True,
            )
        ],
    )
    skill = AgentSkill(
        id="tck",
        name="Conformance",
        description="Behaves as the A2A conformance kit asks, by message id prefix",
        tags=["conformance", "tck"],
    )
    return AgentCard(
        name="a2a-wire conformance agent",
        description="The a2a-wire agent under test for the A2A conformance kit",
        version="1.0.0",
        capabilities=capabilities,
        default_input_modes=["text/plain", "application/json"],
        default_output_modes=["text/plain", "application/json"],
        skills=[skill],
    )


def conformance_push_settings() -> PushSettings:
    """Webhook settings for the kit: plain ``http`` and loopback receivers are allowed.

    Returns:
        The push settings (never use them outside a test network).
    """
    loopback = AddressPolicy.from_strings(["localhost", "127.0.0.0/8", "::1"])
    return PushSettings(allow_http=True, allowlist=loopback)


def conformance_app(store: EventLogStore | None = None, **agent_options: Any) -> web.Application:
    """The conformance server: JSON-RPC at ``/``, in-memory tasks unless ``store`` is given.

    Args:
        store: The task store (``create_app``'s); in memory when ``None``.
        **agent_options: Passed to :class:`ConformanceAgent`.

    Returns:
        The aiohttp application.
    """
    settings = ServerSettings(rpc_path="/", push=conformance_push_settings())
    agent = ConformanceAgent(**agent_options)
    return create_app(conformance_card(), agent, store=store, settings=settings)


def main(argv: list[str] | None = None) -> None:
    """Serve the conformance agent until interrupted.

    Args:
        argv: Command-line arguments (``--host``, ``--port``); ``sys.argv`` when ``None``.
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9999)
    args = parser.parse_args(argv)
    web.run_app(conformance_app(), host=args.host, port=args.port)


if __name__ == "__main__":
    main()
