"""Per-task event fan-out: apply an agent's event, store it, then hand it to every open stream.

Theory of operation
-------------------
Each task the server is busy with has one :class:`TaskHub`. The hub holds the live task, its
open streams (:class:`~a2a_wire.server._subscriber.Subscriber`), its running agent and a lock.
Every change of the task goes through :meth:`TaskHub.publish`, which under the lock:

1. applies the event with :func:`a2a_wire._protocol.tasks.apply` (an illegal event is refused,
   logged, and changes nothing), then bounds the history (:func:`a2a_wire.server._history.trim`);
2. writes the task to the store (``create`` for the first event, ``update`` after that), so a
   task is durable before any client sees it;
3. encodes the event once, as a StreamResponse, and appends those bytes to the queue of every
   subscriber, in the order the events were applied (spec 3.5.2).

With push notifications on (``on_push``), the same bytes go to the store as the ``push`` event
of that write, which adds them to the outbox for every webhook of the task in the same
transaction (:mod:`a2a_wire.server.store._push`); the hub then calls ``on_push`` to wake the
delivery worker. A new task is stored together with the push config sent inline with its
SendMessage, and its first outbox row is the task itself.

A new stream (SubscribeToTask, or a follow-up SendStreamingMessage) registers while holding the
same lock and gets the task as it is then as its first frame, so it sees every later event
exactly once and none twice. After the event that makes the task terminal or interrupted, or a
direct Message reply, every subscriber is finished and removed (spec 3.1.2, 3.1.6).

The hub owns its state. The runtime (:mod:`a2a_wire.server._engine`) asks it to start, end and
stop an agent run, and holds it (:meth:`TaskHub.hold`) while a call or a stream uses it; a hub
neither held nor running calls ``on_idle``, and the runtime forgets it (the task is stored).
During :meth:`TaskHub.cancelling`, the end of the agent's run does not release the calls
waiting on it; the cancel does, once recorded (:mod:`a2a_wire.server._cancel`).

This module uses asyncio (locks, futures) but not aiohttp.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
from collections.abc import Callable, Iterator

from a2a_wire import codec
from a2a_wire._protocol.ids import new_uuid
from a2a_wire._protocol.states import is_settled
from a2a_wire._protocol.tasks import InvalidTransitionError, apply, new_task
from a2a_wire.errors import InternalError, ProtocolError
from a2a_wire.server import _history
from a2a_wire.server._executor import AgentEvent
from a2a_wire.server._run import Run
from a2a_wire.server._subscriber import Subscriber, Subscription
from a2a_wire.server.store._base import TaskStore, now_timestamp
from a2a_wire.types import (
    Message,
    StreamResponse,
    Task,
    TaskArtifactUpdateEvent,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)

__all__ = ["TaskHub"]

log = logging.getLogger("a2a_wire.server")


def _task_frame(task: Task, history_length: int | None = None) -> bytes:
    return codec.encode(StreamResponse(task=_history.view(task, history_length)))


class TaskHub:
    """The live state of one task: the task, its lock, its streams and its running agent.

    Args:
        task_id: The task id (chosen before the task exists, for a new request).
        task: The stored task, or ``None`` until the agent's first event makes it.
        owner: The caller owning the task.
        store: Where each change is written.
        queue_size: Bound of each subscriber's queue.
        on_push: Wakes the push delivery worker; ``None`` when push notifications are off.
        history_limit: Most messages the task keeps (``ServerSettings.max_history_per_task``).
        push_config: A config sent inline with the SendMessage that makes the task; stored
            with it.
        on_idle: Called when the hub stops being in use (see the module docstring).
    """

    def __init__(
        self,
        task_id: str,
        task: Task | None,
        owner: str,
        store: TaskStore,
        queue_size: int,
        on_push: Callable[[], None] | None = None,
        *,
        history_limit: int | None = None,
        push_config: TaskPushNotificationConfig | None = None,
        on_idle: Callable[[TaskHub], None] | None = None,
    ) -> None:
        self.task_id = task_id
        self.owner = owner
        self.lock = asyncio.Lock()
        self._task = task
        self._store = store
        self._queue_size = queue_size
        self._on_push = on_push
        self._history_limit = history_limit
        self._on_idle = on_idle
        self._subscribers: list[Subscriber] = []
        self._run_task: asyncio.Task[None] | None = None
        self._active_run: Run | None = None
        self._canceling = False
        self._holds = 0
        self._new_push_configs: list[TaskPushNotificationConfig] = []
        if push_config is not None:
            push_config.task_id = task_id
            self._new_push_configs.append(push_config)

    @property
    def task(self) -> Task | None:
        """The live task; ``None`` until the agent's first event makes it."""
        return self._task

    @property
    def subscribers(self) -> tuple[Subscriber, ...]:
        """The open streams."""
        return tuple(self._subscribers)

    @property
    def run_task(self) -> asyncio.Task[None] | None:
        """The asyncio task of the agent's running ``execute``, if any."""
        return self._run_task

    # -- holds and runs -----------------------------------------------------------------------

    @contextlib.contextmanager
    def hold(self) -> Iterator[TaskHub]:
        """Keep the hub in use for the ``with`` block (a call, or a stream's life)."""
        self._holds += 1
        try:
            yield self
        finally:
            self._holds -= 1
            self._check_idle()

    def _check_idle(self) -> None:
        if self._holds <= 0 and self._run_task is None and self._on_idle is not None:
            self._on_idle(self)

    def start_run(self, run: Run, task: asyncio.Task[None]) -> None:
        """Record that ``task`` runs the agent's ``execute`` for ``run`` (until :meth:`end_run`)."""
        self._active_run = run
        self._run_task = task

    def end_run(self, run: Run, task: asyncio.Task[None]) -> None:
        """``execute`` of ``run`` has ended (``task`` is done): close the run, end the streams."""
        run.close()
        if self._run_task is task:
            self._run_task = None
            self._active_run = None
        if not task.cancelled() and (exc := task.exception()) is not None:
            log.error("agent run of task %s ended with an error", self.task_id, exc_info=exc)
            self.finish_all(InternalError("The server could not record the task's progress"))
        elif self._task is None:
            self.finish_all(InternalError("The agent stopped without replying"))
        if not self._canceling:
            run.settle()
        self._check_idle()

    async def stop_run(self, grace: float) -> None:
        """Cancel the agent's running ``execute``, if any, and wait ``grace`` seconds at most."""
        running = self._run_task
        if running is None or running.done():
            return
        running.cancel()
        done, _ = await asyncio.wait({running}, timeout=grace)
        if not done:
            log.warning("agent run of task %s ignores cancellation", self.task_id)

    @contextlib.contextmanager
    def cancelling(self) -> Iterator[None]:
        """For the ``with`` block, a cancel is under way (see the module docstring)."""
        execute_run = self._active_run
        self._canceling = True
        try:
            yield
        finally:
            self._canceling = False
            if execute_run is not None:
                execute_run.settle()

    # -- streams ------------------------------------------------------------------------------

    def subscribe(self, history_length: int | None = None) -> Subscriber:
        """Open a stream; call with :attr:`lock` held. Its first frame is the current task."""
        sub = Subscriber(self._queue_size, history_length)
        if self._task is not None:
            sub.push(_task_frame(self._task, history_length))
        self._subscribers.append(sub)
        return sub

    def open_stream(self, history_length: int | None = None) -> Subscription:
        """:meth:`subscribe` for a stream writer: the subscription also holds the hub."""
        with contextlib.ExitStack() as cleanup:
            cleanup.enter_context(self.hold())
            sub = self.subscribe(history_length)
            cleanup.callback(self.unsubscribe, sub)
            return Subscription(sub, cleanup.pop_all())

    def unsubscribe(self, sub: Subscriber) -> None:
        """Close a stream's subscription; other streams and the task carry on."""
        sub.close()
        if sub in self._subscribers:
            self._subscribers.remove(sub)

    def finish_all(self, error: ProtocolError | None = None) -> None:
        """End every open stream."""
        for sub in self._subscribers:
            sub.finish(error)
        self._subscribers.clear()

    # -- events -------------------------------------------------------------------------------

    async def publish(self, event: AgentEvent, run: Run) -> bool:
        """Apply ``event`` to the task, store it and stream it; ``False`` if it was refused."""
        async with self.lock:
            return await self.publish_locked(event, run)

    async def publish_locked(self, event: AgentEvent, run: Run) -> bool:
        """:meth:`publish` for a caller that holds :attr:`lock`."""
        if run.closed:
            return self._refuse(event, "the agent run that sent it has ended")
        if self._task is None:
            return await self._first_event(event, run)
        if isinstance(event, Task):
            return self._refuse(event, "the task exists already; send status or artifact updates")
        try:
            apply(self._task, event, now=now_timestamp())
            _history.trim(self._task, self._history_limit)
        except InvalidTransitionError as exc:
            return self._refuse(event, str(exc))
        if isinstance(event, Message):
            await self._store.update(self._task)
            return True
        frame = self._frame(event) if self._subscribers or self._on_push is not None else b""
        if self._on_push is None:
            await self._store.update(self._task)
        elif await self._store.update(self._task, push=frame):
            self._on_push()
        self._fan_out(event, run, frame)
        return True

    async def add_message(self, message: Message) -> None:
        """Append the client's follow-up ``message`` to the task and store it; hold :attr:`lock`."""
        assert self._task is not None
        apply(self._task, message, now=now_timestamp())
        _history.trim(self._task, self._history_limit)
        await self._store.update(self._task)

    def _refuse(self, event: AgentEvent, why: str) -> bool:
        log.warning(
            "task %s: refused %s from the agent: %s", self.task_id, type(event).__name__, why
        )
        return False

    async def _first_event(self, event: AgentEvent, run: Run) -> bool:
        if isinstance(event, Message):
            self._reply(event, run)
            return True
        if isinstance(event, Task):
            task = self._adopt(event, run)
            if task is None:
                return False
        elif run.message is None:
            return self._refuse(event, "no task to update")
        else:
            task = new_task(
                run.message, task_id=self.task_id, context_id=run.context_id, now=now_timestamp()
            )
        await self._make_task(task, run)
        if isinstance(event, Task):
            self._check_end(task, run)
            return True
        return await self.publish_locked(event, run)

    async def ensure_task(self, run: Run) -> None:
        """Make the SUBMITTED task from the run's message if the agent has not made it yet.

        For SendMessage with ``returnImmediately`` when the agent is slow to send its first
        event: the client gets a task at once; the agent's later events update it (a Task or a
        Message as its first event is then refused, and logged).
        """
        async with self.lock:
            if self._task is not None or run.closed or run.message is None:
                return
            now = now_timestamp()
            task = new_task(run.message, task_id=self.task_id, context_id=run.context_id, now=now)
            await self._make_task(task, run)

    async def _make_task(self, task: Task, run: Run) -> None:
        """Store a new task, announce it to open streams and release the run's first waiter."""
        _history.trim(task, self._history_limit)
        await self._create(task, run.owner)
        self._task = task
        self._send_task(task)
        run.task_made()

    async def _create(self, task: Task, owner: str) -> None:
        configs, self._new_push_configs = self._new_push_configs, []
        if self._on_push is None:
            await self._store.create(task, owner=owner)
        elif await self._store.create(
            task, owner=owner, push_configs=configs, push=_task_frame(task)
        ):
            self._on_push()

    def _reply(self, message: Message, run: Run) -> None:
        reply = copy.copy(message)
        reply.task_id = ""
        reply.context_id = reply.context_id or run.context_id
        reply.message_id = reply.message_id or new_uuid()
        frame = codec.encode(StreamResponse(message=reply)) if self._subscribers else b""
        for sub in self._subscribers:
            sub.push(frame)
        self.finish_all()
        run.answered(reply)

    def _adopt(self, event: Task, run: Run) -> Task | None:
        """The agent's own first Task, checked and given this request's ids."""
        if event.id and event.id != self.task_id:
            self._refuse(event, f"a new task must use the id {self.task_id!r} of the context")
            return None
        if event.context_id and event.context_id != run.context_id:
            self._refuse(event, f"a new task must use the context id {run.context_id!r}")
            return None
        task = _history.view(event)
        task.id, task.context_id = self.task_id, run.context_id
        status = task.status or TaskStatus(state=TaskState.SUBMITTED)
        if not status.state.is_known or status.state == TaskState.UNSPECIFIED:
            self._refuse(event, f"a task cannot start in state {status.state}")
            return None
        now = now_timestamp()
        task.status = TaskStatus(
            state=status.state, message=status.message, timestamp=status.timestamp or now
        )
        if not task.history and run.message is not None:
            first = new_task(run.message, task_id=task.id, context_id=task.context_id, now=now)
            task.history = first.history
        return task

    def _send_task(self, task: Task) -> None:
        shared: bytes | None = None
        for sub in self._subscribers:
            if sub.history_length is None:
                shared = shared or _task_frame(task)
                sub.push(shared)
            else:
                sub.push(_task_frame(task, sub.history_length))

    def _frame(self, event: TaskStatusUpdateEvent | TaskArtifactUpdateEvent) -> bytes:
        """The StreamResponse bytes of an applied event, as streams and webhooks get them."""
        task = self._task
        assert task is not None
        if isinstance(event, TaskStatusUpdateEvent):
            wire = TaskStatusUpdateEvent(
                task_id=task.id,
                context_id=task.context_id,
                status=task.status,
                metadata=event.metadata,
            )
            return codec.encode(StreamResponse(status_update=wire))
        artifact = TaskArtifactUpdateEvent(
            task_id=task.id,
            context_id=task.context_id,
            artifact=event.artifact,
            append=event.append,
            last_chunk=event.last_chunk,
            metadata=event.metadata,
        )
        return codec.encode(StreamResponse(artifact_update=artifact))

    def _fan_out(
        self, event: TaskStatusUpdateEvent | TaskArtifactUpdateEvent, run: Run, frame: bytes
    ) -> None:
        for sub in self._subscribers:
            sub.push(frame)
        if isinstance(event, TaskStatusUpdateEvent):
            assert self._task is not None
            self._check_end(self._task, run)

    def _check_end(self, task: Task, run: Run) -> None:
        if task.status is not None and is_settled(task.status.state):
            self.finish_all()
            run.settle()
            if self._active_run is not None:
                self._active_run.settle()
