"""The two skills ``a2a-wire serve`` offers out of the box: ``echo`` and ``delegate``.

:class:`EchoSkill` streams the text it received back as a chunked artifact;
:class:`DelegateSkill` hands the message to a remote A2A agent (:class:`RemoteAgent`) and
relays what the remote task does as the local task's events, never a credential. Their
behaviour is described in docs/server.md (``[[skills]]``, ``[[agents]]``).
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping

from a2a_wire._protocol.ids import new_uuid
from a2a_wire._protocol.states import is_terminal
from a2a_wire.cli._relay import Relay, Remote, RemoteAgent, remote_from_history
from a2a_wire.client import A2AClient, ClientError
from a2a_wire.errors import ProtocolError, TaskNotCancelableError
from a2a_wire.server import AgentExecutor, EventQueue, RequestContext, TaskUpdater
from a2a_wire.types import (
    CancelTaskRequest,
    Message,
    Role,
    SendMessageRequest,
)

__all__ = ["DelegateSkill", "EchoSkill", "RemoteAgent"]

#: Message metadata keys that steer this server and are not passed on to the remote agent.
ROUTING_KEYS = ("skillId", "agent", "remoteSkillId")
_MAX_TRACKED = 10_000  # remote ids kept for follow-ups and cancels (oldest dropped first)


class EchoSkill(AgentExecutor):
    """Echo the message's text back as a chunked artifact (docs/server.md, ``[[skills]]``).

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


Connector = Callable[[RemoteAgent], Awaitable[A2AClient]]


async def _connect(agent: RemoteAgent) -> A2AClient:
    return await A2AClient.connect(
        agent.url, settings=agent.settings, credentials=agent.credentials
    )


def _outgoing(message: Message, remote: Remote) -> SendMessageRequest:
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
    """Relay messages to a registered remote agent (docs/server.md, ``[[skills]]``).

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
        self._remotes: OrderedDict[str, Remote] = OrderedDict()
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

    def _track(self, task_id: str, remote: Remote) -> None:
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
        if remote is None and context.task is not None:  # a follow-up another process began
            remote = remote_from_history(context.task, self.agents)
        if remote is None:
            if context.task is not None:
                await updater.fail("The remote task of this conversation is no longer known.")
                return
            chosen = self._choose(message)
            if isinstance(chosen, str):
                await updater.reject(chosen)
                return
            remote = Remote(chosen)
        relay = Relay(updater, events, remote, self._track, started=context.task is not None)
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
        if remote is None and context.task is not None:
            remote = remote_from_history(context.task, self.agents)
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

    async def _cancel_remote(self, remote: Remote, local_id: str) -> str:
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
