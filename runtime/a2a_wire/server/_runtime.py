"""The task runtime: routes messages, follow-ups and cancels to the hub of each task.

:class:`Runtime` applies the multi-turn rules (spec 3.4): a new task's id is the server's, a
``taskId`` must name a visible (-32001), not terminal (-32004) task of the same context
(-32602), a follow-up to an interrupted task supersedes a run still unwinding after
``followup_wait_seconds``, one while the turn is open is -32004, and a retried ``messageId`` is
not taken twice. Runs are started and ended by :class:`~a2a_wire.server._runner.Runner`,
CancelTask is :mod:`a2a_wire.server._cancel`, and :attr:`Runtime.peers` keeps runs in step with a
shared store's leases. A hub nobody holds (``async with runtime.hub(...)``) and no agent runs on
is forgotten. The rules in full: docs/internals/server.md ("The runtime, the hubs and the
runner").
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from a2a_wire._protocol.ids import new_uuid
from a2a_wire._protocol.states import is_interrupted, is_settled, is_terminal, state_word
from a2a_wire.errors import (
    InternalError,
    InvalidParamsError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from a2a_wire.server import _history
from a2a_wire.server._call_info import CallInfo
from a2a_wire.server._executor import AgentExecutor, request_context
from a2a_wire.server._hub import TaskHub
from a2a_wire.server._lifecycle import Phase
from a2a_wire.server._peers import Peers
from a2a_wire.server._run import Run
from a2a_wire.server._runner import Runner, unrecorded
from a2a_wire.server._settings import ServerSettings
from a2a_wire.server._skills import SkillSet
from a2a_wire.server._stored_answer import settled_answer
from a2a_wire.server._subscriber import Subscription
from a2a_wire.server.store import EventLogStore, StoreUnavailableError, shared_store
from a2a_wire.types import (
    Message,
    SendMessageRequest,
    SendMessageResponse,
    Task,
    TaskPushNotificationConfig,
    TaskState,
)

__all__ = ["Runtime", "Started"]

log = logging.getLogger("a2a_wire.server")

LEASE_RETRY_SECONDS = 0.1
"""Pause between two tries of a follow-up to take a lease another process still holds."""


@dataclass(frozen=True, slots=True)
class Started:
    """A message the agent now works on (:meth:`Runtime.send`).

    Attributes:
        hub: The task's hub.
        run: The agent's run on the message.
        stream: The stream of the task, when one was asked for.
    """

    hub: TaskHub
    run: Run
    stream: Subscription | None

    async def outcome(self, history_length: int | None) -> SendMessageResponse:
        """The SendMessage result once the run settled: the agent's Message or the task.

        Raises:
            InternalError: the run ended without a task or a reply (the server shut down).
            TaskNotFoundError: the task was deleted meanwhile.
            StoreUnavailableError: the store could not record how the task ends, or be read, or
                failed before the task existed (then nothing was made).
        """
        if self.run.ending:  # not behind the lock: its holder may be stalled
            raise unrecorded(self.hub.task_id)
        async with self.hub.lock:
            if self.run.reply is not None:
                return SendMessageResponse(message=self.run.reply)
            if self.run.ending:
                raise unrecorded(self.hub.task_id)
            if self.hub.state is None:
                raise self.run.lost or InternalError("The agent stopped without replying")
            done, self.run.commit = self.run.commit, None  # the commit that ended the turn
            if (answer := settled_answer(done, history_length)) is not None:
                return answer
            return SendMessageResponse(task=_history.view(await self.hub.task(), history_length))


def _state(task: Task) -> TaskState:
    return task.status.state if task.status is not None else TaskState.UNSPECIFIED


def _same_message(run: Run | None, message: Message) -> bool:
    """Whether ``run`` works on a message with ``message``'s id."""
    return (
        run is not None
        and run.message is not None
        and (run.message.message_id == message.message_id)
    )


def _taken(task: Task, message: Message) -> bool:
    """Whether the task's history holds a client message with ``message``'s id."""
    return any(
        kept.message_id == message.message_id and kept.role == message.role for kept in task.history
    )


def _not_found(task_id: str) -> TaskNotFoundError:
    return TaskNotFoundError(f"Task not found: {task_id!r}", metadata={"taskId": task_id})


class Runtime:
    """Owns the hubs of the tasks in use and the agent runs working on them.

    Args:
        executor: The agent.
        store: Task storage.
        settings: Server settings.
        skills: The skill set routing messages, if the server has skills.
        on_push: Wakes the push delivery worker; ``None`` when push notifications are off.
        on_state: Told each state a task of this process enters (telemetry); ``None``: nobody.
    """

    def __init__(
        self,
        executor: AgentExecutor,
        store: EventLogStore,
        settings: ServerSettings,
        skills: SkillSet | None = None,
        on_push: Callable[[], None] | None = None,
        on_state: Callable[[TaskState], None] | None = None,
    ) -> None:
        self.executor = executor
        self.on_state = on_state
        self.store = store
        self.settings = settings
        self.skills = skills
        self.hubs: dict[str, TaskHub] = {}
        self.on_push = on_push
        shared = shared_store(store)
        self.runner = Runner(executor, shared)
        self.peers = Peers(self.hubs.get, self.runner, settings, shared) if shared else None

    @property
    def runs(self) -> set[asyncio.Task[None]]:
        """The asyncio tasks of the agent runs (:attr:`Runner.runs`)."""
        return self.runner.runs

    # -- hubs ---------------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def hub(self, task_id: str, owner: str) -> AsyncIterator[TaskHub]:
        """The hub of an existing task, held for the ``async with`` block.

        Raises:
            TaskNotFoundError: no such task is visible to ``owner``.
        """
        hub = await self._find(task_id, owner)
        with hub.hold():
            yield hub

    async def _find(self, task_id: str, owner: str) -> TaskHub:
        hub = self.hubs.get(task_id)
        if hub is None:
            task = await self.store.get(task_id, owner=owner) if task_id else None
            if task is None:
                raise _not_found(task_id)
            hub = self.hubs.get(task_id)  # another request may have loaded it meanwhile
            if hub is None:
                hub = self._new_hub(task_id, _state(task), owner)
        elif hub.owner != owner:
            # Another owner's live task: the same owner-scoped lookup as for an unknown id
            # (it finds nothing), so the answer takes no measurably different path (spec 13.1).
            await self.store.get(task_id, owner=owner)
            raise _not_found(task_id)
        if hub.state is None or hub.owner != owner:
            raise _not_found(task_id)
        return hub

    def _new_hub(
        self,
        task_id: str,
        state: TaskState | None,
        owner: str,
        push_config: TaskPushNotificationConfig | None = None,
    ) -> TaskHub:
        """A hub, registered; it is forgotten once nothing holds it and no agent runs on it."""
        hub = self.hubs[task_id] = TaskHub(
            task_id,
            state,
            owner,
            self.store,
            self.settings.stream_queue_size,
            self.on_push,
            push_config=push_config,
            on_idle=self._forget,
            follow=self.peers is not None,
            write_retry_seconds=self.settings.store_write_retry_seconds,
            on_state=self.on_state,
        )
        return hub

    def busy(self, task_id: str) -> bool:
        """Whether an agent runs on the task now (retention leaves such a task alone)."""
        hub = self.hubs.get(task_id)
        return hub is not None and hub.run_task is not None

    def _forget(self, hub: TaskHub) -> None:
        if self.hubs.get(hub.task_id) is hub:
            del self.hubs[hub.task_id]

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

    # -- messages -----------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def send(
        self,
        request: SendMessageRequest,
        info: CallInfo,
        *,
        stream: bool = False,
        history_length: int | None = None,
        push_config: TaskPushNotificationConfig | None = None,
    ) -> AsyncIterator[Started]:
        """Start the agent on a message (spec 3.1.1, 3.1.2, 3.4); the hub is held for the block.

        Args:
            request: The SendMessage params, checked.
            info: The caller.
            stream: Open a stream of the task (:attr:`Started.stream`, which holds the hub on
                its own until it is closed).
            history_length: The stream's ``historyLength``, checked.
            push_config: Already validated; stored with the task the message creates (a
                follow-up's config is stored by the handler before this is called).

        Raises:
            TaskNotFoundError: ``message.taskId`` names no visible task.
            UnsupportedOperationError: the task is terminal, or the agent is still busy on it.
            InvalidParamsError: ``message.contextId`` contradicts the task's.
        """
        message = request.message
        assert message is not None  # REQUIRED, checked when the params were decoded
        if message.task_id:
            async with self.hub(message.task_id, info.owner) as hub:
                yield await self._continue(hub, request, message, info, stream, history_length)
            return
        skill_id = self._route(message, None, info, request)
        task_id = new_uuid()
        message.context_id = message.context_id or new_uuid()
        hub = self._new_hub(task_id, None, info.owner, push_config)
        with hub.hold():
            run = Run(hub, message, message.context_id, info.owner)
            context = request_context(
                info,
                task_id,
                message.context_id,
                message=message,
                configuration=request.configuration,
                metadata=request.metadata,
                skill_id=skill_id,
            )
            self.runner.start(hub, run, context)
            yield Started(hub, run, hub.open_stream(history_length) if stream else None)

    async def _continue(
        self,
        hub: TaskHub,
        request: SendMessageRequest,
        message: Message,
        info: CallInfo,
        stream: bool,
        history_length: int | None,
    ) -> Started:
        """Add a follow-up message to a task and start the agent on it."""
        running = hub.active_run
        if not _same_message(running, message):
            running = None
            await self._wait_idle(hub)
        async with hub.lock:
            task = await hub.task()
            if running is not None or _taken(task, message):
                return await self._repeat(hub, task, running, message, stream, history_length)
            self._check_open(task, message)
            if hub.run_task is not None:
                raise self._busy(task.id)
            skill_id = self._route(message, task, info, request)
            message.context_id = task.context_id
            if self.peers is not None and not await self._take_lease(task, self.peers):
                raise self._busy(task.id)  # it runs in another process
            try:
                now = await hub.add_message(message)
            except StoreUnavailableError:
                if self.peers is not None:  # the caller's answer waits on no second statement
                    self.runner.spawn(self.runner.give_back_lease(task.id))
                raise
            except BaseException:
                if self.peers is not None:
                    await self.peers.run_ended(task.id)
                raise
            run = Run(hub, message, task.context_id, info.owner)
            context = request_context(
                info,
                task.id,
                task.context_id,
                message=message,
                task=now.task,
                configuration=request.configuration,
                metadata=request.metadata,
                skill_id=skill_id,
            )
            self.runner.start(hub, run, context)
            opened = hub.open_stream(history_length, snapshot=now) if stream else None
            return Started(hub, run, opened)

    async def _repeat(
        self,
        hub: TaskHub,
        task: Task,
        running: Run | None,
        message: Message,
        stream: bool,
        history_length: int | None,
    ) -> Started:
        """A message the task took already: its run's answer, or the task as it is now."""
        log.info(
            "task %s: message %s was taken already; not taken twice",
            hub.task_id,
            message.message_id,
        )
        run = running
        if run is None:  # answered long ago: a run that ended, for the task as it is
            run = Run(hub, message, task.context_id, hub.owner)
            run.close()
            run.settle()
        opened = None
        if stream:
            now = await self.store.snapshot(hub.task_id, owner=hub.owner)
            if now is None:
                raise _not_found(hub.task_id)
            opened = hub.open_stream(history_length, snapshot=now)
            if running is None and is_settled(_state(now.task)):
                opened.subscriber.finish()  # the task as it is, and the end
        return Started(hub, run, opened)

    @staticmethod
    def _check_open(task: Task, message: Message) -> None:
        state = _state(task)
        if is_terminal(state):
            raise UnsupportedOperationError(
                f"Task {task.id} is {state_word(state)}; it takes no more messages",
                metadata={"taskId": task.id, "state": str(state.value)},
            )
        if message.context_id and message.context_id != task.context_id:
            raise InvalidParamsError(
                "message.contextId differs from the context of the task",
                violations=[("message.contextId", f"task {task.id} is in another context")],
            )

    @staticmethod
    def _busy(task_id: str) -> UnsupportedOperationError:
        return UnsupportedOperationError(
            f"Task {task_id} is still being worked on; send the next message once it is "
            "finished or asks for input",
            metadata={"taskId": task_id},
        )

    async def _wait_idle(self, hub: TaskHub) -> None:
        """Wait for a run whose turn has ended to return (bounded), else supersede it.

        ``followup_wait_seconds`` at most; a run whose turn is still open is busy (-32004).
        """
        running, run = hub.run_task, hub.active_run
        if running is not None and run is not None and run.phase is Phase.WORKING:
            # A stream reading the store may have shown the commit that ends the turn before
            # the append returned to the hub; that append holds the lock until it has.
            async with hub.lock:
                running, run = hub.run_task, hub.active_run
        if running is None or running.done():
            return
        if run is None or run.phase is not Phase.TURN_ENDED:
            raise self._busy(hub.task_id)
        done, _ = await asyncio.wait({running}, timeout=self.settings.followup_wait_seconds)
        if not done and hub.run_task is running:
            log.warning(
                "task %s: the agent's run had not returned %.1f s after its turn ended; "
                "the follow-up supersedes it",
                hub.task_id,
                self.settings.followup_wait_seconds,
            )
            hub.supersede_run()

    async def _take_lease(self, task: Task, peers: Peers) -> bool:
        """Take the task's lease for a follow-up here; whether it was taken.

        For an interrupted task, waits ``followup_wait_seconds`` at most for another process
        whose run is still unwinding to give it back; a running task's lease is tried once.
        """
        loop = asyncio.get_running_loop()
        wait = self.settings.followup_wait_seconds if is_interrupted(_state(task)) else 0.0
        deadline = loop.time() + wait
        while not await peers.take_lease(task.id):
            if loop.time() >= deadline:
                return False
            await asyncio.sleep(LEASE_RETRY_SECONDS)
        return True

    # -- shutdown -----------------------------------------------------------------------------

    async def close(self) -> None:
        """End every open stream, cancel every agent run and wait for them (bounded)."""
        if self.peers is not None:
            self.peers.close()
        for hub in list(self.hubs.values()):
            hub.finish_all()
        await self.runner.stop(self.settings.shutdown_grace_seconds)
