"""The two skills ``a2a-wire serve`` offers out of the box: ``echo`` and ``delegate``.

``echo`` (:class:`EchoSkill`) answers every message with a task: a WORKING status first, then
the text it received as one artifact sent in chunks (``append`` / ``lastChunk``, spec 4.2.2)
with a short pause between them, so that a stream visibly streams, then COMPLETED. Parts that
are not text (data, files) come back unchanged in a second artifact, ``attachments``.

``delegate`` (:class:`DelegateSkill`) hands the message to a remote A2A agent registered in the
configuration (:class:`RemoteAgent`) through :class:`~a2a_wire.client._client.A2AClient`, and relays
what the remote task does as the events of the local task:

* the remote's first answer makes the local task WORKING with a status message naming the agent
  (its ``metadata.delegate`` holds the agent name and the remote task and context ids);
* remote status updates become local status updates with the same state and message (a remote
  SUBMITTED is not repeated); remote artifacts and chunks become local ones, unchanged;
* a remote direct Message reply becomes the local reply;
* a stream that drops is re-subscribed (:meth:`~a2a_wire.client._client.A2AClient.resumable`);
* a remote error or an unreachable agent fails the local task with a status message naming the
  error class and code (never a credential);
* CancelTask on the local task cancels the remote task first (spec 3.1.5); a remote refusal
  (-32002) is passed on, so the local task goes on relaying.

The message sent on is a copy with a fresh ``messageId``; the routing keys ``skillId`` and
``agent`` of its metadata are dropped (a ``remoteSkillId`` becomes the remote's ``skillId``).
Which agent: the message's ``metadata.agent``, else the skill's ``agent`` option, else the only
registered agent. A follow-up to a task waiting for input goes to the same remote task.
"""

from __future__ import annotations

import asyncio
import copy
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from a2a_wire._protocol.ids import new_uuid
from a2a_wire._protocol.states import is_settled, is_terminal
from a2a_wire.client._client import A2AClient, ClientSettings
from a2a_wire.client._credentials import CredentialProvider, NoCredentials
from a2a_wire.client._errors import ClientError
from a2a_wire.errors import ProtocolError, TaskNotCancelableError
from a2a_wire.server._executor import AgentExecutor, EventQueue, RequestContext, TaskUpdater
from a2a_wire.types import (
    CancelTaskRequest,
    Message,
    Role,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)

__all__ = ["DelegateSkill", "EchoSkill", "RemoteAgent"]

#: Message metadata keys that steer this server and are not passed on to the remote agent.
ROUTING_KEYS = ("skillId", "agent", "remoteSkillId")
_MAX_TRACKED = 10_000  # remote ids kept for follow-ups and cancels (oldest dropped first)


class EchoSkill(AgentExecutor):
    """Echo the message's text back as a chunked artifact (see the module docstring).

    Args:
        chunk_size: Characters per artifact chunk.
        chunk_delay_seconds: Pause between two chunks.

    Raises:
        ValueError: ``chunk_size`` is not positive or the delay is negative.
    """

    def __init__(self, chunk_size: int = 16, chunk_delay_seconds: float = 0.05) -> None:
        if chunk_size < 1:
            raise ValueError("chunk_size must be at least 1")
        if chunk_delay_seconds < 0:
            raise ValueError("chunk_delay_seconds must not be negative")
        self.chunk_size = chunk_size
        self.chunk_delay = chunk_delay_seconds

    async def execute(self, context: RequestContext, events: EventQueue) -> None:
        """WORKING, the text in chunks, the other parts, COMPLETED."""
        message = context.message
        assert message is not None
        texts = [part.text for part in message.parts if part.text is not None]
        others = [part for part in message.parts if part.text is None]
        text = "\n".join(texts)
        updater = TaskUpdater(events, context)
        await updater.start_work(f"Echoing {len(text)} characters")
        size = self.chunk_size
        chunks = [text[i : i + size] for i in range(0, len(text), size)]
        artifact_id = ""
        for index, chunk in enumerate(chunks):
            if index:
                await asyncio.sleep(self.chunk_delay)
            artifact_id = await updater.add_artifact(
                chunk,
                artifact_id=artifact_id,
                name="echo",
                append=index > 0,
                last_chunk=index == len(chunks) - 1,
            )
        if others:
            await updater.add_artifact(others, name="attachments", last_chunk=True)
        await updater.complete()


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


Connector = Callable[[RemoteAgent], Awaitable[A2AClient]]


async def _connect(agent: RemoteAgent) -> A2AClient:
    return await A2AClient.connect(
        agent.url, settings=agent.settings, credentials=agent.credentials
    )


@dataclass(slots=True)
class _Remote:
    agent: RemoteAgent
    task_id: str = ""
    context_id: str = ""


def _outgoing(message: Message, remote: _Remote) -> SendMessageRequest:
    """The message to send on: same parts, fresh id, routing keys removed."""
    metadata = dict(message.metadata or {})
    remote_skill = metadata.get("remoteSkillId")
    for key in ROUTING_KEYS:
        metadata.pop(key, None)
    if isinstance(remote_skill, str) and remote_skill:
        metadata["skillId"] = remote_skill
    sent = Message(
        message_id=new_uuid(),
        role=Role.USER,
        parts=list(message.parts),
        task_id=remote.task_id,
        context_id=remote.context_id,
        metadata=metadata or None,
        extensions=list(message.extensions),
    )
    return SendMessageRequest(message=sent)


class DelegateSkill(AgentExecutor):
    """Relay messages to a registered remote agent (see the module docstring).

    Args:
        agents: The registered agents by name.
        agent: The default agent's name; empty: the only registered agent, if there is one.
        connect: Opens a client for an agent (replaceable in tests).

    Raises:
        ValueError: ``agent`` is not registered.
    """

    def __init__(
        self,
        agents: Mapping[str, RemoteAgent],
        *,
        agent: str = "",
        connect: Connector = _connect,
    ) -> None:
        if agent and agent not in agents:
            raise ValueError(f"agent {agent!r} is not registered")
        self.agents = dict(agents)
        self.default_agent = agent
        self._connect = connect
        self._remotes: OrderedDict[str, _Remote] = OrderedDict()
        self._canceling: set[str] = set()  # local tasks whose cancel is under way

    def _choose(self, message: Message) -> RemoteAgent | str:
        """The agent for ``message``, or why there is none."""
        wanted = (message.metadata or {}).get("agent") or self.default_agent
        if isinstance(wanted, str) and wanted:
            found = self.agents.get(wanted)
            return found if found is not None else f"No remote agent is registered as {wanted!r}."
        if len(self.agents) == 1:
            return next(iter(self.agents.values()))
        if not self.agents:
            return "No remote agent is registered; add one under [[agents]] in the configuration."
        names = ", ".join(sorted(self.agents))
        return f"Name the remote agent in message metadata 'agent' (one of: {names})."

    def _track(self, task_id: str, remote: _Remote) -> None:
        self._remotes[task_id] = remote
        self._remotes.move_to_end(task_id)
        while len(self._remotes) > _MAX_TRACKED:
            self._remotes.popitem(last=False)

    async def execute(self, context: RequestContext, events: EventQueue) -> None:
        """Send the message on and relay the remote task's events until it settles."""
        message = context.message
        assert message is not None
        updater = TaskUpdater(events, context)
        remote = self._remotes.get(context.task_id)
        if remote is None:
            if context.task is not None:
                await updater.fail("The remote task of this conversation is no longer known.")
                return
            chosen = self._choose(message)
            if isinstance(chosen, str):
                await updater.reject(chosen)
                return
            remote = _Remote(chosen)
        relay = _Relay(updater, events, remote, self._track, started=context.task is not None)
        relay.canceling = self._canceling
        try:
            client = await self._connect(remote.agent)
            async with client:
                await relay.run(client, _outgoing(message, remote))
        except ProtocolError as exc:
            await updater.fail(
                f"Remote agent {remote.agent.name!r} answered {type(exc).__name__} "
                f"({exc.code}): {exc.message}"
            )
        except ClientError as exc:
            await updater.fail(
                f"Remote agent {remote.agent.name!r} could not be reached: "
                f"{type(exc).__name__}: {exc}"
            )
        if relay.state is not None and is_terminal(relay.state):
            self._remotes.pop(context.task_id, None)

    async def cancel(self, context: RequestContext, events: EventQueue) -> None:
        """Cancel the remote task, then record the local task as CANCELED.

        Raises:
            TaskNotCancelableError: the remote agent refused (its task already ended).
        """
        remote = self._remotes.get(context.task_id)
        updater = TaskUpdater(events, context)
        if remote is None or not remote.task_id:
            await updater.cancel("Canceled before the remote agent had a task.")
            return
        self._canceling.add(context.task_id)
        try:
            note = await self._cancel_remote(remote, context.task_id)
            self._remotes.pop(context.task_id, None)
            await updater.cancel(f"Canceled; remote agent {remote.agent.name!r} {note}.")
        finally:
            self._canceling.discard(context.task_id)

    async def _cancel_remote(self, remote: _Remote, local_id: str) -> str:
        """Cancel the remote task; return what became of it, for the status message."""
        name = remote.agent.name
        try:
            async with await self._connect(remote.agent) as client:
                task = await client.cancel_task(CancelTaskRequest(id=remote.task_id))
        except TaskNotCancelableError as exc:
            raise TaskNotCancelableError(
                f"Remote agent {name!r} refused to cancel its task: {exc.message}",
                metadata={"taskId": local_id},
            ) from None
        except (ProtocolError, ClientError) as exc:
            return f"could not cancel its task ({type(exc).__name__})"
        state = task.status.state.value if task.status is not None else "unknown"
        return f"reports its task as {state}"


class _Relay:
    """Turns the remote task's events into the local task's events."""

    def __init__(
        self,
        updater: TaskUpdater,
        events: EventQueue,
        remote: _Remote,
        track: Callable[[str, _Remote], None],
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
            status = TaskStatus(state=TaskState.WORKING, message=note)
            await self.events.enqueue_event(
                TaskStatusUpdateEvent(
                    task_id=self.updater.task_id,
                    context_id=self.updater.context_id,
                    status=status,
                    metadata={"delegate": info},
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
