"""The task runtime: starts agent runs, routes follow-ups and cancels, and tracks every hub.

Multi-turn rules (spec 3.4): a message without ``taskId`` starts a new task whose id the server
makes (a UUID4, spec 3.4.2), in the client's context or a fresh one (spec 3.4.1). A message with
``taskId`` must name a task the caller can see (-32001), that is not terminal (-32004), and whose
context it does not contradict (-32602 on ``message.contextId``; a missing contextId is taken
from the task). While the agent still runs on a task, a follow-up waits for that run if the
task is interrupted (the agent is about to return), and is refused with -32004 otherwise.

CancelTask is in :mod:`a2a_wire.server._cancel`.

Every agent run is an asyncio task kept in :attr:`Runtime.runs` until it finishes; :meth:`close`
cancels and awaits them on shutdown. Nothing is fire-and-forget.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from a2a_wire._protocol.ids import new_uuid
from a2a_wire._protocol.states import is_interrupted, is_settled, is_terminal
from a2a_wire._protocol.tasks import apply, with_history
from a2a_wire.errors import (
    InternalError,
    InvalidParamsError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from a2a_wire.server._auth import owner_key
from a2a_wire.server._executor import AgentExecutor, RequestContext, agent_message
from a2a_wire.server._hub import Run, Subscriber, TaskHub, task_view
from a2a_wire.server._limits import trim_history
from a2a_wire.server._settings import ServerSettings
from a2a_wire.server._skills import SkillSet
from a2a_wire.server.store._base import TaskStore, now_timestamp
from a2a_wire.types import (
    Message,
    SendMessageRequest,
    Task,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)

__all__ = ["CallInfo", "Runtime", "Subscription"]

log = logging.getLogger("a2a_wire.server")

AGENT_FAILED = "The agent failed while working on this task."
AGENT_SILENT = "The agent finished without replying."
AGENT_RETURNED_EARLY = "The agent stopped before the task was finished."


@dataclass(frozen=True, slots=True)
class CallInfo:
    """Who calls and with which service parameters (spec 3.2.6); one per call.

    The server makes it per HTTP request (:mod:`a2a_wire.server._admission`) and scopes it to the call's
    ``tenant`` once the params are decoded (:meth:`with_tenant`), before any handler runs.

    Attributes:
        caller: The owner key everything the call creates or reads is scoped by (spec 13.1):
            :func:`a2a_wire.server._auth.owner_key` of the tenant and the client id. Pass it as
            ``owner=`` to every store call.
        extensions: URIs from the ``A2A-Extensions`` header.
        client_id: The registered client's id; ``""`` when anonymous.
        tenant: The request's ``tenant``.
        skills: Ids of the skills the caller may use; ``None`` for no restriction.
        origin: Scheme and authority clients use to reach the server (for the extended card).
    """

    caller: str = ""
    extensions: tuple[str, ...] = ()
    client_id: str = ""
    tenant: str = ""
    skills: frozenset[str] | None = None
    origin: str = ""

    @property
    def owner(self) -> str:
        """The owner key (same as :attr:`caller`)."""
        return self.caller

    def with_tenant(self, tenant: str) -> CallInfo:
        """This call info scoped to ``tenant``: owner key recomputed."""
        return replace(self, tenant=tenant, caller=owner_key(tenant, self.client_id))


@dataclass(slots=True)
class Subscription:
    """An open stream of one task; :meth:`close` it when the HTTP response ends."""

    subscriber: Subscriber
    hub: TaskHub
    runtime: Runtime
    open: bool = True

    def close(self) -> None:
        """Detach from the task (idempotent); the task and other streams carry on."""
        if self.open:
            self.open = False
            self.hub.unsubscribe(self.subscriber)
            self.runtime.release(self.hub)


def _state(task: Task) -> TaskState:
    return task.status.state if task.status is not None else TaskState.UNSPECIFIED


def _not_found(task_id: str) -> TaskNotFoundError:
    return TaskNotFoundError(f"Task not found: {task_id!r}", metadata={"taskId": task_id})


class Runtime:
    """Owns the hubs of the tasks in use and the agent runs working on them.

    Args:
        executor: The agent.
        store: Task storage.
        settings: Server settings.
    """

    def __init__(
        self,
        executor: AgentExecutor,
        store: TaskStore,
        settings: ServerSettings,
        skills: SkillSet | None = None,
    ) -> None:
        self.executor = executor
        self.store = store
        self.settings = settings
        self.skills = skills
        self.extended_card: Callable[[CallInfo], dict[str, Any]] | None = None
        """Builds GetExtendedAgentCard's answer; ``None`` when no extended card is served."""
        self.hubs: dict[str, TaskHub] = {}
        self.runs: set[asyncio.Task[None]] = set()
        self.on_push: Callable[[], None] | None = None
        """Wakes the push delivery worker; set when the card declares push notifications."""

    # -- hubs ---------------------------------------------------------------------------------

    async def acquire(self, task_id: str, owner: str) -> TaskHub:
        """The hub of an existing task, with a reference the caller must :meth:`release`.

        Raises:
            TaskNotFoundError: no such task is visible to ``owner``.
        """
        hub = self.hubs.get(task_id)
        if hub is None:
            task = await self.store.get(task_id, owner=owner) if task_id else None
            if task is None:
                raise _not_found(task_id)
            hub = self.hubs.get(task_id)  # another request may have loaded it meanwhile
            if hub is None:
                hub = self.hubs[task_id] = self._hub(task_id, task, owner)
        elif hub.owner != owner:
            # Another owner's live task: the same owner-scoped lookup as for an unknown id
            # (it finds nothing), so the answer takes no measurably different path (spec 13.1).
            await self.store.get(task_id, owner=owner)
            raise _not_found(task_id)
        if hub.task is None or hub.owner != owner:
            raise _not_found(task_id)
        hub.refs += 1
        return hub

    def _hub(self, task_id: str, task: Task | None, owner: str) -> TaskHub:
        queue_size = self.settings.stream_queue_size
        hub = TaskHub(task_id, task, owner, self.store, queue_size, self.on_push)
        hub.history_limit = self.settings.max_history_per_task
        return hub

    def _route(
        self, message: Message, task: Task | None, info: CallInfo, request: SendMessageRequest
    ) -> str:
        """The id of the skill serving ``message`` (``""`` without skills); see :mod:`skills`."""
        if self.skills is None:
            return ""
        allowed = info.skills if info.skills is not None else frozenset(self.skills.by_id)
        config = request.configuration
        accepted = config.accepted_output_modes if config is not None else []
        return self.skills.select(message, allowed, task=task, accepted_output_modes=accepted).id

    def skill_for_task(self, task: Task, info: CallInfo) -> str:
        """The id of the skill serving ``task`` (for a cancel); ``""`` when none fits."""
        if self.skills is None:
            return ""
        allowed = info.skills if info.skills is not None else frozenset(self.skills.by_id)
        return self.skills.task_skill_id(task, allowed)

    def release(self, hub: TaskHub) -> None:
        """Drop one reference; a hub nobody uses is forgotten (its task is in the store)."""
        hub.refs -= 1
        if hub.refs <= 0 and self.hubs.get(hub.task_id) is hub:
            del self.hubs[hub.task_id]

    # -- messages -----------------------------------------------------------------------------

    async def begin_message(
        self,
        request: SendMessageRequest,
        info: CallInfo,
        *,
        stream: bool,
        push_config: TaskPushNotificationConfig | None = None,
    ) -> tuple[TaskHub, Run, Subscriber | None]:
        """Start the agent on a message (spec 3.1.1, 3.1.2, 3.4).

        ``push_config``, already validated, is stored with the task the message creates (a
        follow-up's config is stored by the handler before this is called).

        Returns:
            The hub (with a reference for the caller to release), the run, and the stream's
            subscriber when ``stream`` is set.

        Raises:
            TaskNotFoundError: ``message.taskId`` names no visible task.
            UnsupportedOperationError: the task is terminal, or the agent is still busy on it.
            InvalidParamsError: ``message.contextId`` contradicts the task's.
        """
        message = request.message
        assert message is not None  # REQUIRED, checked when the params were decoded
        config = request.configuration
        history_length = config.history_length if config is not None else None
        if message.task_id:
            hub = await self.acquire(message.task_id, info.caller)
            try:
                run, sub = await self._continue(hub, request, message, info, stream, history_length)
            except BaseException:
                self.release(hub)
                raise
            return hub, run, sub
        skill_id = self._route(message, None, info, request)
        task_id = new_uuid()
        message.context_id = message.context_id or new_uuid()
        hub = self.hubs[task_id] = self._hub(task_id, None, info.caller)
        hub.refs = 1
        if push_config is not None:
            push_config.task_id = task_id
            hub.new_push_configs.append(push_config)
        run = Run(hub, message, message.context_id, info.caller)
        sub = hub.subscribe(history_length) if stream else None
        context = RequestContext(
            message=message,
            task_id=task_id,
            context_id=message.context_id,
            caller=info.client_id,
            requested_extensions=info.extensions,
            configuration=config,
            metadata=request.metadata,
            tenant=info.tenant,
            skill_id=skill_id,
        )
        self._start(hub, run, context)
        return hub, run, sub

    async def _continue(
        self,
        hub: TaskHub,
        request: SendMessageRequest,
        message: Message,
        info: CallInfo,
        stream: bool,
        history_length: int | None,
    ) -> tuple[Run, Subscriber | None]:
        """Add a follow-up message to a task and start the agent on it."""
        await self._wait_idle(hub)
        async with hub.lock:
            task = hub.task
            assert task is not None
            self._check_open(task, message)
            if hub.run_task is not None:
                raise self._busy(task)
            skill_id = self._route(message, task, info, request)
            message.context_id = task.context_id
            apply(task, message, now=now_timestamp())
            trim_history(task, self.settings.max_history_per_task)
            await self.store.update(task)
            run = Run(hub, message, task.context_id, info.caller)
            sub = hub.subscribe(history_length) if stream else None
            context = RequestContext(
                message=message,
                task_id=task.id,
                context_id=task.context_id,
                task=with_history(task, None),
                caller=info.client_id,
                requested_extensions=info.extensions,
                configuration=request.configuration,
                metadata=request.metadata,
                tenant=info.tenant,
                skill_id=skill_id,
            )
            self._start(hub, run, context)
        return run, sub

    @staticmethod
    def _check_open(task: Task, message: Message) -> None:
        state = _state(task)
        if is_terminal(state):
            raise UnsupportedOperationError(
                f"Task {task.id} is {state.value}; it takes no more messages",
                metadata={"taskId": task.id, "state": str(state.value)},
            )
        if message.context_id and message.context_id != task.context_id:
            raise InvalidParamsError(
                "message.contextId differs from the context of the task",
                violations=[("message.contextId", f"task {task.id} is in another context")],
            )

    @staticmethod
    def _busy(task: Task) -> UnsupportedOperationError:
        return UnsupportedOperationError(
            f"Task {task.id} is still being worked on; send the next message once it is "
            "finished or asks for input",
            metadata={"taskId": task.id},
        )

    async def _wait_idle(self, hub: TaskHub) -> None:
        running = hub.run_task
        if running is None or running.done():
            return
        assert hub.task is not None
        if not is_interrupted(_state(hub.task)):
            raise self._busy(hub.task)
        await asyncio.wait({running})  # the agent asked for input and is about to return

    async def result_of(self, hub: TaskHub, run: Run, history_length: int | None) -> dict[str, Any]:
        """The SendMessage result once ``run`` settled: the agent's Message or the task.

        Raises:
            InternalError: the run ended without a task or a reply (the server shut down).
        """
        async with hub.lock:
            if run.reply is not None:
                return {"message": run.reply.to_dict()}
            if hub.task is None:
                raise InternalError("The agent stopped without replying")
            return {"task": task_view(hub.task, history_length)}

    # -- agent runs ---------------------------------------------------------------------------

    def _start(self, hub: TaskHub, run: Run, context: RequestContext) -> None:
        hub.refs += 1
        hub.active_run = run
        task = asyncio.create_task(self._execute(hub, run, context))
        hub.run_task = task
        self.runs.add(task)
        task.add_done_callback(functools.partial(self._run_done, hub, run))

    async def _execute(self, hub: TaskHub, run: Run, context: RequestContext) -> None:
        try:
            await self.executor.execute(context, run)
        except asyncio.CancelledError:
            raise
        except Exception:  # the agent's code is a boundary: its failure fails the task
            log.exception("agent failed on task %s", hub.task_id)
            await self._conclude(hub, run, AGENT_FAILED)
        else:
            await self._conclude(hub, run, None)

    async def _conclude(self, hub: TaskHub, run: Run, failure: str | None) -> None:
        """After ``execute``: fail a task the agent left unfinished, or made none for."""
        async with hub.lock:
            if run.closed:
                return
            state = _state(hub.task) if hub.task is not None else None
            if failure is None:
                if state is None:
                    failure = AGENT_SILENT
                elif is_settled(state):
                    return
                else:
                    failure = AGENT_RETURNED_EARLY
            elif state is not None and is_terminal(state):
                return
            status = TaskStatus(state=TaskState.FAILED, message=agent_message(failure))
            await hub.publish_locked(TaskStatusUpdateEvent(status=status), run)

    def _run_done(self, hub: TaskHub, run: Run, task: asyncio.Task[None]) -> None:
        self.runs.discard(task)
        run.closed = True
        if hub.run_task is task:
            hub.run_task = None
            hub.active_run = None
        if not task.cancelled() and (exc := task.exception()) is not None:
            log.error("agent run of task %s ended with an error", hub.task_id, exc_info=exc)
            hub.finish_all(InternalError("The server could not record the task's progress"))
        elif hub.task is None:
            hub.finish_all(InternalError("The agent stopped without replying"))
        if not hub.canceling:
            run.settle()
        self.release(hub)

    async def stop_run(self, hub: TaskHub) -> None:
        """Cancel the agent run of ``hub``, if any, and wait for it (bounded)."""
        running = hub.run_task
        if running is None or running.done():
            return
        running.cancel()
        done, _ = await asyncio.wait({running}, timeout=self.settings.cancel_grace_seconds)
        if not done:
            log.warning("agent run of task %s ignores cancellation", hub.task_id)

    # -- shutdown -----------------------------------------------------------------------------

    async def close(self) -> None:
        """End every open stream, cancel every agent run and wait for them (bounded)."""
        for hub in list(self.hubs.values()):
            hub.finish_all()
        runs = list(self.runs)
        for task in runs:
            task.cancel()
        if runs:
            _, pending = await asyncio.wait(runs, timeout=self.settings.shutdown_grace_seconds)
            if pending:
                log.warning("%d agent runs ignored cancellation at shutdown", len(pending))
