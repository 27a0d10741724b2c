"""The ``delegate`` skill's relay: a remote task's events as the local task's events.

:class:`RemoteAgent` is a remote agent the skill may relay to; :class:`Relay` sends the message on and turns what the remote task does into events of the
local task (the rules are in :mod:`a2a_wire.cli._skills`). :class:`Remote` is which agent and
which remote task a local task is relayed to; the local task's first WORKING status message
carries the same in its ``metadata.delegate``, so that any process serving the task (a follow-up
may reach any process on a shared store) finds the remote task again
(:func:`remote_from_history`).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from a2a_wire._protocol.states import is_settled
from a2a_wire.client import A2AClient, ClientSettings, CredentialProvider, NoCredentials
from a2a_wire.server import EventQueue, TaskUpdater
from a2a_wire.types import (
    Message,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)

__all__ = ["DELEGATE_KEY", "Relay", "Remote", "RemoteAgent", "remote_from_history"]

DELEGATE_KEY = "delegate"
"""Metadata key of the local task's first WORKING status (and its message): agent and ids."""


@dataclass(frozen=True)
class RemoteAgent:
    """A remote agent the ``delegate`` skill may hand messages to.

    Attributes:
        name: The name messages and the configuration use for it.
        url: Its base URL (the card is read from its well-known path, spec 8.2).
        credentials: What to authenticate with; secrets never appear in ``repr``.
        settings: Client limits and the address guard's allowlist for it.
    """

    name: str
    url: str
    credentials: CredentialProvider = field(default_factory=NoCredentials)
    settings: ClientSettings = field(default_factory=ClientSettings)


@dataclass(slots=True)
class Remote:
    agent: RemoteAgent
    task_id: str = ""
    context_id: str = ""


def remote_from_history(task: Task, agents: Mapping[str, RemoteAgent]) -> Remote | None:
    """The remote task a local ``task`` was relayed to, from its history; ``None`` if unknown."""
    for message in reversed(task.history):
        info = (message.metadata or {}).get(DELEGATE_KEY)
        if not isinstance(info, dict):
            continue
        agent = agents.get(str(info.get("agent", "")))
        task_id, context_id = info.get("remoteTaskId"), info.get("remoteContextId")
        if agent is not None and isinstance(task_id, str) and isinstance(context_id, str):
            return Remote(agent, task_id, context_id)
    return None


class Relay:
    """Turns the remote task's events into the local task's events."""

    def __init__(
        self,
        updater: TaskUpdater,
        events: EventQueue,
        remote: Remote,
        track: Callable[[str, Remote], None],
        *,
        started: bool,
    ) -> None:
        self.updater = updater
        self.events = events
        self.remote = remote
        self.track = track
        self.started = started
        self.state: TaskState | None = None
        self.canceling: set[str] = set()
        # A follow-up's first snapshot shows the remote task before our message took effect
        # (still INPUT_REQUIRED, old artifacts): nothing in it is news for the local task.
        self._stale_snapshot = started

    async def run(self, client: A2AClient, request: SendMessageRequest) -> None:
        """Send ``request`` and relay every answer until the remote task settles."""
        caps = client.card.capabilities if client.card is not None else None
        if caps is not None and caps.streaming:
            stream = client.resumable(client.send_streaming_message(request))
            async with stream:
                async for event in stream:
                    await self.forward(event)
        else:
            answer = await client.send_message(request)
            self._stale_snapshot = False  # a blocking answer is the task after our message
            await self.forward(StreamResponse(task=answer.task, message=answer.message))
        if self.state is None or not is_settled(self.state):
            await self.updater.fail(
                f"Remote agent {self.remote.agent.name!r} stopped before its task finished."
            )

    def _relabel(self, message: Message | None) -> Message | None:
        if message is None:
            return None
        local = copy.copy(message)
        local.task_id = self.updater.task_id
        local.context_id = self.updater.context_id
        return local

    async def forward(self, event: StreamResponse) -> None:
        """Relay one remote event."""
        if event.message is not None:
            reply = self._relabel(event.message)
            assert reply is not None
            if self.started:
                await self.updater.complete(reply)
                self.state = TaskState.COMPLETED
            else:
                reply.task_id = ""
                await self.events.enqueue_event(reply)
                self.state = TaskState.COMPLETED
        elif event.task is not None:
            await self._snapshot(event.task)
        elif event.status_update is not None and event.status_update.status is not None:
            await self._status(event.status_update.status)
        elif event.artifact_update is not None and event.artifact_update.artifact is not None:
            update = event.artifact_update
            assert update.artifact is not None
            await self.updater.add_artifact(
                update.artifact.parts,
                artifact_id=update.artifact.artifact_id,
                name=update.artifact.name,
                append=update.append,
                last_chunk=update.last_chunk,
                metadata=update.artifact.metadata,
            )

    async def _snapshot(self, task: Task) -> None:
        self.remote.task_id, self.remote.context_id = task.id, task.context_id
        self.track(self.updater.task_id, self.remote)
        if self._stale_snapshot:
            self._stale_snapshot = False
            return
        if not self.started:
            self.started = True
            info: dict[str, Any] = {
                "agent": self.remote.agent.name,
                "remoteTaskId": task.id,
                "remoteContextId": task.context_id,
            }
            note = self.updater.new_message(f"Handed to remote agent {self.remote.agent.name!r}")
            note.metadata = {DELEGATE_KEY: info}  # kept in the history (remote_from_history)
            status = TaskStatus(state=TaskState.WORKING, message=note)
            await self.events.enqueue_event(
                TaskStatusUpdateEvent(
                    task_id=self.updater.task_id,
                    context_id=self.updater.context_id,
                    status=status,
                    metadata={DELEGATE_KEY: info},
                )
            )
            self.state = TaskState.WORKING
        for artifact in task.artifacts:
            await self.updater.add_artifact(
                artifact.parts,
                artifact_id=artifact.artifact_id,
                name=artifact.name,
                metadata=artifact.metadata,
            )
        if task.status is not None:
            await self._status(task.status)

    async def _status(self, status: TaskStatus) -> None:
        state = status.state
        if state == TaskState.SUBMITTED or (state == self.state and status.message is None):
            return
        if state == TaskState.CANCELED and self.updater.task_id in self.canceling:
            self.state = state  # settled; the local cancel records the outcome itself
            return
        await self.updater.update_status(state, self._relabel(status.message))
        self.state = state
