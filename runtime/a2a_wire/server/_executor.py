"""The agent side of the server: what an agent implements and what it is given.

An agent is an :class:`AgentExecutor`; for each SendMessage or SendStreamingMessage (spec 3.1.1,
3.1.2) the server calls ``execute`` with a :class:`RequestContext` and an :class:`EventQueue`,
for CancelTask (spec 3.1.5) ``cancel``. The agent's first event decides whether a task is made
(a Message is a direct reply); every event is applied under :mod:`a2a_wire._protocol.tasks`,
stored, then streamed. :class:`TaskUpdater` wraps the common moves (docs/server.md, "Executors").
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from a2a_wire._protocol.ids import new_uuid
from a2a_wire.server import _history
from a2a_wire.types import (
    Artifact,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)

__all__ = [
    "AgentEvent",
    "AgentExecutor",
    "Caller",
    "EventQueue",
    "RequestContext",
    "TaskUpdater",
    "agent_message",
    "request_context",
]

AgentEvent = Message | Task | TaskStatusUpdateEvent | TaskArtifactUpdateEvent
"""What an agent may put on its :class:`EventQueue`."""


@dataclass(frozen=True, slots=True)
class RequestContext:
    """What the agent knows about one request.

    Attributes:
        message: The client's message, with ``contextId`` filled in (and ``taskId`` for a
            follow-up); ``None`` for a cancel.
        task_id: The task this request works on. For a new request the server has chosen it
            already (a fresh UUID); it becomes the task's id once the agent makes the task.
        context_id: The conversation (spec 3.4.1): the client's, the task's, or a fresh one.
        task: A copy of the stored task for a follow-up message or a cancel (with the new
            message already in its history); ``None`` for a new request.
        caller: The registered client's id; ``""`` when the server has no registered clients
            (see :mod:`a2a_wire.server._auth`).
        requested_extensions: Extension URIs from the ``A2A-Extensions`` header (spec 3.2.6).
        configuration: The request's ``configuration``, if any.
        metadata: The request's ``metadata``, if any.
        tenant: The request's ``tenant`` (spec 8.3.2), ``""`` when none.
        skill_id: The skill the request was routed to (:mod:`a2a_wire.server._skills`); ``""`` when
            the server has no skills.

    Context ids are namespaced per caller and tenant (spec 13.1): two callers may use the same
    ``contextId`` for unrelated conversations. An agent keeping state per conversation should
    key it by :attr:`conversation_key`, not by ``context_id`` alone.
    """

    message: Message | None
    task_id: str
    context_id: str
    task: Task | None = None
    caller: str = ""
    requested_extensions: tuple[str, ...] = ()
    configuration: SendMessageConfiguration | None = None
    metadata: dict[str, Any] | None = None
    tenant: str = ""
    skill_id: str = ""

    @property
    def conversation_key(self) -> tuple[str, str, str]:
        """``(tenant, caller, context_id)``: the conversation, unique across callers."""
        return self.tenant, self.caller, self.context_id


class Caller(Protocol):
    """Who calls, as :func:`request_context` reads it (the server's per-call info)."""

    @property
    def client_id(self) -> str: ...
    @property
    def extensions(self) -> tuple[str, ...]: ...
    @property
    def tenant(self) -> str: ...


def request_context(
    info: Caller,
    task_id: str,
    context_id: str,
    *,
    message: Message | None = None,
    task: Task | None = None,
    configuration: SendMessageConfiguration | None = None,
    metadata: dict[str, Any] | None = None,
    skill_id: str = "",
) -> RequestContext:
    """What the agent is given for one call: a message, or a cancel (``message`` ``None``).

    Args:
        info: The caller (a :class:`~a2a_wire.server._call_info.CallInfo`).
        task_id: The task worked on (chosen already for a new one).
        context_id: Its context.
        message: The client's message.
        task: The stored task, for a follow-up or a cancel; the agent gets a snapshot of it.
        configuration: The request's ``configuration``.
        metadata: The request's ``metadata``.
        skill_id: The skill serving the call (``""`` without skills).

    Returns:
        The context for :meth:`~a2a_wire.server._executor.AgentExecutor.execute` or ``cancel``.
    """
    return RequestContext(
        message=message,
        task_id=task_id,
        context_id=context_id,
        task=None if task is None else _history.view(task),
        caller=info.client_id,
        requested_extensions=info.extensions,
        configuration=configuration,
        metadata=metadata,
        tenant=info.tenant,
        skill_id=skill_id,
    )


class EventQueue(Protocol):
    """Where an agent puts its events; the server's implementation applies and streams them."""

    async def enqueue_event(self, event: AgentEvent) -> bool:
        """Hand one event to the server.

        Returns:
            Whether the event was applied; a refused event is logged by the server.
        """
        ...


class AgentExecutor(abc.ABC):
    """Base class of an agent: implement :meth:`execute`, optionally :meth:`cancel`."""

    @abc.abstractmethod
    async def execute(self, context: RequestContext, events: EventQueue) -> None:
        """Work on the request, putting a reply or task events on ``events``.

        Runs as a background task of the server: the client's call returns when the task is
        terminal or interrupted (or at once with ``returnImmediately``), not when this returns.

        Args:
            context: The request.
            events: Where the reply or the task's events go.
        """

    async def cancel(self, context: RequestContext, events: EventQueue) -> None:  # noqa: B027
        """React to CancelTask; the default does nothing.

        After this returns, the server cancels a running :meth:`execute` and, unless this
        method already moved the task to a terminal state, records it as CANCELED. Raise
        :class:`~a2a_wire.errors.TaskNotCancelableError` to refuse the cancel.

        Args:
            context: The task to cancel (``message`` is ``None``).
            events: Where a CANCELED status (or other events) may go.
        """


def agent_message(
    text: str, *, task_id: str = "", context_id: str = "", metadata: dict[str, Any] | None = None
) -> Message:
    """A one-part text message from the agent, with a fresh ``messageId``.

    Args:
        text: The text.
        task_id: The task it belongs to, if any.
        context_id: The conversation it belongs to, if known.
        metadata: Optional message metadata.

    Returns:
        The message.
    """
    return Message(
        message_id=new_uuid(),
        role=Role.AGENT,
        parts=[Part(text=text)],
        task_id=task_id,
        context_id=context_id,
        metadata=metadata,
    )


class TaskUpdater:
    """Helpers for the usual moves of a task, each one event on the queue.

    Every method that takes ``message`` accepts text (sent as a one-part agent message) or a
    ready :class:`~a2a_wire.types.Message`; ``None`` sends the status without a message.

    Args:
        events: The queue given to :meth:`AgentExecutor.execute`.
        context: The request, for the task and context ids.
    """

    def __init__(self, events: EventQueue, context: RequestContext) -> None:
        self.events = events
        self.task_id = context.task_id
        self.context_id = context.context_id

    def new_message(self, text: str) -> Message:
        """An agent text message bound to this task."""
        return agent_message(text, task_id=self.task_id, context_id=self.context_id)

    async def update_status(self, state: TaskState, message: str | Message | None = None) -> bool:
        """Move the task to ``state`` (or repeat it, with a progress message).

        Returns:
            Whether the server applied the update.
        """
        if isinstance(message, str):
            message = self.new_message(message)
        status = TaskStatus(state=state, message=message)
        event = TaskStatusUpdateEvent(
            task_id=self.task_id, context_id=self.context_id, status=status
        )
        return await self.events.enqueue_event(event)

    async def start_work(self, message: str | Message | None = None) -> bool:
        """WORKING."""
        return await self.update_status(TaskState.WORKING, message)

    async def require_input(self, message: str | Message | None = None) -> bool:
        """INPUT_REQUIRED: the agent waits for the client's next message (spec 3.4.3)."""
        return await self.update_status(TaskState.INPUT_REQUIRED, message)

    async def require_auth(self, message: str | Message | None = None) -> bool:
        """AUTH_REQUIRED: the agent waits for credentials (spec 7.6)."""
        return await self.update_status(TaskState.AUTH_REQUIRED, message)

    async def complete(self, message: str | Message | None = None) -> bool:
        """COMPLETED."""
        return await self.update_status(TaskState.COMPLETED, message)

    async def fail(self, message: str | Message | None = None) -> bool:
        """FAILED."""
        return await self.update_status(TaskState.FAILED, message)

    async def reject(self, message: str | Message | None = None) -> bool:
        """REJECTED: the agent will not do this task."""
        return await self.update_status(TaskState.REJECTED, message)

    async def cancel(self, message: str | Message | None = None) -> bool:
        """CANCELED (from :meth:`AgentExecutor.cancel`)."""
        return await self.update_status(TaskState.CANCELED, message)

    async def add_artifact(
        self,
        parts: Sequence[Part] | str,
        *,
        artifact_id: str = "",
        name: str = "",
        append: bool = False,
        last_chunk: bool = False,
        metadata: dict[str, Any] | None = None,
    ) -> str:
        """Add an artifact, or with ``append=True`` add parts to one sent earlier (spec 4.2.2).

        Args:
            parts: The parts, or text for a single text part.
            artifact_id: The artifact's id; a fresh one when empty (give the returned id to
                later ``append`` calls).
            name: Optional artifact name.
            append: Extend the parts of the artifact with this id instead of replacing it.
            last_chunk: Mark this as the final piece of the artifact.
            metadata: Optional artifact metadata.

        Returns:
            The artifact id.

        Raises:
            ValueError: ``append`` without ``artifact_id`` (it would start a new artifact).
        """
        if append and not artifact_id:
            raise ValueError(
                "add_artifact(append=True) needs artifact_id: pass the id that the first"
                " add_artifact of this artifact returned"
            )
        if isinstance(parts, str):
            parts = [Part(text=parts)]
        artifact_id = artifact_id or new_uuid()
        artifact = Artifact(
            artifact_id=artifact_id, name=name, parts=list(parts), metadata=metadata
        )
        event = TaskArtifactUpdateEvent(
            task_id=self.task_id,
            context_id=self.context_id,
            artifact=artifact,
            append=append,
            last_chunk=last_chunk,
        )
        await self.events.enqueue_event(event)
        return artifact_id
