"""Per-task event fan-out: apply an agent's event, store it, then hand it to every open stream.

Theory of operation
-------------------
Each task the server is busy with has one :class:`TaskHub`. The hub holds the live task, its
open streams (:class:`Subscriber`) and a lock. Every change of the task goes through
:meth:`TaskHub.publish`, which under the lock:

1. applies the event with :func:`a2a_wire._protocol.tasks.apply` (an illegal event is refused, logged,
   and changes nothing);
2. writes the task to the store (``create`` for the first event, ``update`` after that), so a
   task is durable before any client sees it;
3. encodes the event once, as the ``result`` of a StreamResponse, and appends those bytes to
   the queue of every subscriber, in the order the events were applied (spec 3.5.2).

With push notifications on (``on_push``), the same bytes go to the store as the ``push`` event
of that write, which adds them to the outbox for every webhook of the task in the same
transaction (:mod:`a2a_wire.server.store._push`); the hub then calls ``on_push`` to wake the delivery
worker. A new task is stored together with the push config sent inline with its SendMessage,
and its first outbox row is the task itself.

A new stream (SubscribeToTask, or a follow-up SendStreamingMessage) registers while holding the
same lock and gets the task as it is then as its first frame, so it sees every later event
exactly once and none twice. After the event that makes the task terminal or interrupted, or a
direct Message reply, every subscriber is finished and removed (spec 3.1.2, 3.1.6).

Subscriber queues are bounded. Pushing never waits: a subscriber whose queue is full has its
backlog dropped and replaced by one error, after which it takes nothing more. The agent and the
other streams never wait for a slow reader, and a slow reader never holds more than the limit.

This module uses asyncio (locks, futures) but not aiohttp; the HTTP side reads
:meth:`Subscriber.next` in :mod:`a2a_wire.server._streaming`.
"""

from __future__ import annotations

import asyncio
import collections
import copy
import enum
import logging
from collections.abc import Callable
from typing import Any

from a2a_wire import codec
from a2a_wire._protocol.ids import new_uuid
from a2a_wire._protocol.states import is_settled
from a2a_wire._protocol.tasks import (
    InvalidTransitionError,
    apply,
    new_task,
    with_history,
)
from a2a_wire.errors import InternalError, ProtocolError
from a2a_wire.server._executor import AgentEvent
from a2a_wire.server._limits import trim_history
from a2a_wire.server.store._base import TaskStore, now_timestamp
from a2a_wire.types import (
    Message,
    Task,
    TaskArtifactUpdateEvent,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)

__all__ = ["END", "KEEPALIVE", "Run", "Subscriber", "TaskHub", "task_view"]

log = logging.getLogger("a2a_wire.server")


class Signal(enum.Enum):
    """Non-data items a subscriber hands to its writer."""

    KEEPALIVE = "keepalive"
    END = "end"


KEEPALIVE = Signal.KEEPALIVE
END = Signal.END

Item = bytes | ProtocolError | Signal


def task_view(task: Task, history_length: int | None, include_artifacts: bool = True) -> Any:
    """The JSON form of ``task`` for a response.

    History is trimmed to ``history_length`` (spec 3.2.4); without ``include_artifacts`` the
    ``artifacts`` key is left out (spec 3.1.4).
    """
    out = (task if history_length is None else with_history(task, history_length)).to_dict()
    if not include_artifacts:
        out.pop("artifacts", None)
    return out


class Subscriber:
    """The bounded, ordered queue of one open stream.

    Args:
        limit: Most frames held; see the module docstring for what happens beyond it.
        history_length: ``historyLength`` for the Task frame this stream receives.
    """

    __slots__ = ("_items", "_limit", "_waiter", "closed", "history_length")

    def __init__(self, limit: int, history_length: int | None = None) -> None:
        self._items: collections.deque[Item] = collections.deque()
        self._limit = limit
        self._waiter: asyncio.Future[None] | None = None
        self.closed = False
        self.history_length = history_length

    def push(self, frame: bytes) -> None:
        """Queue one encoded StreamResponse; never waits."""
        if self.closed:
            return
        if len(self._items) >= self._limit:
            self._items.clear()
            self._items.append(
                InternalError(
                    f"Stream closed: the reader fell more than {self._limit} events behind; "
                    "call SubscribeToTask to resume"
                )
            )
            self.closed = True
        else:
            self._items.append(frame)
        self._wake()

    def finish(self, error: ProtocolError | None = None) -> None:
        """End the stream after the queued frames, with ``error`` as its last event if given."""
        if self.closed:
            return
        self._items.append(END if error is None else error)
        self.closed = True
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def next(self, timeout: float) -> Item:
        """The next item, or :data:`KEEPALIVE` when nothing came for ``timeout`` seconds."""
        if not self._items:
            loop = asyncio.get_running_loop()
            waiter = self._waiter = loop.create_future()
            timer = loop.call_later(timeout, _expire, waiter)
            try:
                await waiter
            finally:
                timer.cancel()
                self._waiter = None
            if not self._items:
                return KEEPALIVE
        return self._items.popleft()

    def ready(self) -> Item | None:
        """The next item if one is queued already, else ``None``; never waits."""
        return self._items.popleft() if self._items else None


def _expire(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


class Run:
    """One source of events for a hub: an ``execute`` call, or a cancel (an :class:`EventQueue`).

    Attributes:
        message: The client's message that started the run (``None`` for a cancel).
        context_id: The context of the task the run works on.
        owner: The caller that owns a task this run creates.
        first: Resolved when the task exists or the agent replied with a Message.
        settled: Resolved when the task is terminal or interrupted, the agent replied with a
            Message, or the run ended.
        reply: The agent's direct Message reply, if it gave one.
        closed: No more events are taken from this run.
    """

    __slots__ = ("closed", "context_id", "first", "hub", "message", "owner", "reply", "settled")

    def __init__(self, hub: TaskHub, message: Message | None, context_id: str, owner: str) -> None:
        loop = asyncio.get_running_loop()
        self.hub = hub
        self.message = message
        self.context_id = context_id
        self.owner = owner
        self.first: asyncio.Future[None] = loop.create_future()
        self.settled: asyncio.Future[None] = loop.create_future()
        self.reply: Message | None = None
        self.closed = False
        if hub.task is not None:
            self.first.set_result(None)

    async def enqueue_event(self, event: AgentEvent) -> bool:
        """Apply, store and stream one event (see :meth:`TaskHub.publish`)."""
        return await self.hub.publish(event, self)

    def settle(self) -> None:
        """Release whoever waits on this run."""
        for future in (self.first, self.settled):
            if not future.done():
                future.set_result(None)


class TaskHub:
    """The live state of one task: the task, its lock, its streams and its running agent.

    Args:
        task_id: The task id (chosen before the task exists, for a new request).
        task: The stored task, or ``None`` until the agent's first event makes it.
        owner: The caller owning the task.
        store: Where each change is written.
        queue_size: Bound of each subscriber's queue.
        on_push: Wakes the push delivery worker; ``None`` when push notifications are off.
    """

    def __init__(
        self,
        task_id: str,
        task: Task | None,
        owner: str,
        store: TaskStore,
        queue_size: int,
        on_push: Callable[[], None] | None = None,
    ) -> None:
        self.task_id = task_id
        self.task = task
        self.owner = owner
        self.store = store
        self.queue_size = queue_size
        self.lock = asyncio.Lock()
        self.subscribers: list[Subscriber] = []
        self.run_task: asyncio.Task[None] | None = None
        self.active_run: Run | None = None
        self.canceling = False
        self.refs = 0
        self.on_push = on_push
        self.history_limit: int | None = None
        """Most messages the task keeps (``ServerSettings.max_history_per_task``)."""
        self.new_push_configs: list[TaskPushNotificationConfig] = []
        """Configs sent inline with the SendMessage that makes the task; stored with it."""

    def subscribe(self, history_length: int | None = None) -> Subscriber:
        """Open a stream; call with :attr:`lock` held. Its first frame is the current task."""
        sub = Subscriber(self.queue_size, history_length)
        if self.task is not None:
            sub.push(codec.dumps({"task": task_view(self.task, history_length)}))
        self.subscribers.append(sub)
        return sub

    def unsubscribe(self, sub: Subscriber) -> None:
        """Close a stream's subscription; other streams and the task carry on."""
        sub.closed = True
        if sub in self.subscribers:
            self.subscribers.remove(sub)

    def finish_all(self, error: ProtocolError | None = None) -> None:
        """End every open stream."""
        for sub in self.subscribers:
            sub.finish(error)
        self.subscribers.clear()

    async def publish(self, event: AgentEvent, run: Run) -> bool:
        """Apply ``event`` to the task, store it and stream it; ``False`` if it was refused."""
        async with self.lock:
            return await self.publish_locked(event, run)

    async def publish_locked(self, event: AgentEvent, run: Run) -> bool:
        """:meth:`publish` for a caller that holds :attr:`lock`."""
        if run.closed:
            return self._refuse(event, "the agent run that sent it has ended")
        if self.task is None:
            return await self._first_event(event, run)
        if isinstance(event, Task):
            return self._refuse(event, "the task exists already; send status or artifact updates")
        try:
            apply(self.task, event, now=now_timestamp())
            trim_history(self.task, self.history_limit)
        except InvalidTransitionError as exc:
            return self._refuse(event, str(exc))
        if isinstance(event, Message):
            await self.store.update(self.task)
            return True
        frame = self._frame(event) if self.subscribers or self.on_push is not None else b""
        if self.on_push is None:
            await self.store.update(self.task)
        elif await self.store.update(self.task, push=frame):
            self.on_push()
        self._fan_out(event, run, frame)
        return True

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
        await self._start(task, run)
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
            if self.task is not None or run.closed or run.message is None:
                return
            now = now_timestamp()
            task = new_task(run.message, task_id=self.task_id, context_id=run.context_id, now=now)
            await self._start(task, run)

    async def _start(self, task: Task, run: Run) -> None:
        """Store a new task, announce it to open streams and release the run's first waiter."""
        trim_history(task, self.history_limit)
        await self._create(task, run.owner)
        self.task = task
        self._send_task(task)
        if not run.first.done():
            run.first.set_result(None)

    async def _create(self, task: Task, owner: str) -> None:
        configs, self.new_push_configs = self.new_push_configs, []
        if self.on_push is None:
            await self.store.create(task, owner=owner)
            return
        frame = codec.dumps({"task": task_view(task, None)})
        if await self.store.create(task, owner=owner, push_configs=configs, push=frame):
            self.on_push()

    def _reply(self, message: Message, run: Run) -> None:
        reply = copy.copy(message)
        reply.task_id = ""
        reply.context_id = reply.context_id or run.context_id
        reply.message_id = reply.message_id or new_uuid()
        run.reply = reply
        run.closed = True
        frame = codec.dumps({"message": reply.to_dict()}) if self.subscribers else b""
        for sub in self.subscribers:
            sub.push(frame)
        self.finish_all()
        run.settle()

    def _adopt(self, event: Task, run: Run) -> Task | None:
        """The agent's own first Task, checked and given this request's ids."""
        if event.id and event.id != self.task_id:
            self._refuse(event, f"a new task must use the id {self.task_id!r} of the context")
            return None
        if event.context_id and event.context_id != run.context_id:
            self._refuse(event, f"a new task must use the context id {run.context_id!r}")
            return None
        task = with_history(event, None)
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
        for sub in self.subscribers:
            if sub.history_length is None:
                shared = shared or codec.dumps({"task": task_view(task, None)})
                sub.push(shared)
            else:
                sub.push(codec.dumps({"task": task_view(task, sub.history_length)}))

    def _frame(self, event: TaskStatusUpdateEvent | TaskArtifactUpdateEvent) -> bytes:
        """The StreamResponse bytes of an applied event, as streams and webhooks get them."""
        task = self.task
        assert task is not None
        if isinstance(event, TaskStatusUpdateEvent):
            wire = TaskStatusUpdateEvent(
                task_id=task.id,
                context_id=task.context_id,
                status=task.status,
                metadata=event.metadata,
            )
            return codec.dumps({"statusUpdate": wire.to_dict()})
        artifact = TaskArtifactUpdateEvent(
            task_id=task.id,
            context_id=task.context_id,
            artifact=event.artifact,
            append=event.append,
            last_chunk=event.last_chunk,
            metadata=event.metadata,
        )
        return codec.dumps({"artifactUpdate": artifact.to_dict()})

    def _fan_out(
        self, event: TaskStatusUpdateEvent | TaskArtifactUpdateEvent, run: Run, frame: bytes
    ) -> None:
        task = self.task
        assert task is not None
        for sub in self.subscribers:
            sub.push(frame)
        if isinstance(event, TaskStatusUpdateEvent):
            self._check_end(task, run)

    def _check_end(self, task: Task, run: Run) -> None:
        if task.status is not None and is_settled(task.status.state):
            self.finish_all()
            run.settle()
            if self.active_run is not None:
                self.active_run.settle()
