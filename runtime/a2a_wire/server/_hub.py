"""Per-task coordination: append an agent's event to the task's log, then tell its streams.

Each task the server is busy with has one :class:`TaskHub` (its state, open streams, running
agent and a lock; the task itself lives in the store). Every change goes through
:meth:`TaskHub.publish`: under the lock, one event at a time, checked by
:func:`a2a_wire._protocol.tasks.apply`, appended, and only once committed offered to the streams
and the push delivery worker (spec 3.5.2). The event that settles the task, or a direct Message
reply, ends the run's turn. During :meth:`TaskHub.cancelling` the end of the run does not
release the waiting calls; the cancel does. No aiohttp here. More: docs/internals/server.md
("The runtime, the hubs and the runner").
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import functools
import logging
from collections.abc import Callable, Iterator, Sequence

from a2a_wire import codec
from a2a_wire._protocol.ids import new_uuid
from a2a_wire._protocol.states import is_settled, state_word
from a2a_wire._protocol.tasks import InvalidTransitionError, new_task, now_timestamp
from a2a_wire.errors import InternalError, ProtocolError, TaskNotFoundError
from a2a_wire.server._executor import AgentEvent
from a2a_wire.server._first_task import first_task
from a2a_wire.server._run import Run
from a2a_wire.server._subscriber import Subscriber, Subscription
from a2a_wire.server._write_retry import retry_unwritten
from a2a_wire.server.store import (
    Appended,
    EventLogStore,
    LogEvent,
    LogInput,
    Snapshot,
    StoreUnavailableError,
)
from a2a_wire.types import (
    Message,
    StreamResponse,
    Task,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatusUpdateEvent,
)

__all__ = ["TaskHub"]

log = logging.getLogger("a2a_wire.server")


class TaskHub:
    """The live coordination of one task: its state, lock, streams and running agent.

    Args:
        task_id: The task id (chosen before the task exists, for a new request).
        state: The stored task's state, or ``None`` until the agent's first event makes it.
        owner: The caller owning the task.
        store: Where the task's log is.
        queue_size: Most events each stream keeps in memory (``stream_queue_size``).
        on_push: Wakes the push delivery worker; ``None`` when push notifications are off.
        push_config: A config sent inline with the task's first SendMessage, stored with it.
        on_idle: Called when the hub stops being in use (see the module docstring).
        follow: Other processes share the store (:mod:`a2a_wire.server._peers`): while no agent
            runs here, the streams also wait on the store for the events written elsewhere.
        write_retry_seconds: How long a write the store refused before writing anything is
            tried again (``store_write_retry_seconds``; :mod:`a2a_wire.server._write_retry`).
        on_state: Told each state the task enters through this hub (telemetry).
    """

    def __init__(
        self,
        task_id: str,
        state: TaskState | None,
        owner: str,
        store: EventLogStore,
        queue_size: int,
        on_push: Callable[[], None] | None = None,
        *,
        push_config: TaskPushNotificationConfig | None = None,
        on_idle: Callable[[TaskHub], None] | None = None,
        follow: bool = False,
        write_retry_seconds: float = 0.0,
        on_state: Callable[[TaskState], None] | None = None,
    ) -> None:
        self.task_id = task_id
        self.owner = owner
        self.lock = asyncio.Lock()
        self._state = state
        self._store = store
        self._queue_size = queue_size
        self._on_push = on_push
        self._on_idle = on_idle
        self._follow = follow
        self._write_retry = write_retry_seconds
        self._on_state = on_state
        self._subscribers: list[Subscriber] = []
        self._run_task: asyncio.Task[None] | None = None
        self._active_run: Run | None = None
        self._canceling = False
        self._cancel_target: Run | None = None  # the run a cancel under way stops
        self._holds = 0
        self._new_push_configs: list[TaskPushNotificationConfig] = []
        if push_config is not None:
            push_config.task_id = task_id
            self._new_push_configs.append(push_config)

    @property
    def state(self) -> TaskState | None:
        """The task's state after its last committed event; ``None`` until the task exists."""
        return self._state

    @property
    def subscribers(self) -> tuple[Subscriber, ...]:
        """The open streams."""
        return tuple(self._subscribers)

    @property
    def run_task(self) -> asyncio.Task[None] | None:
        """The asyncio task of the agent's running ``execute``, if any."""
        return self._run_task

    @property
    def active_run(self) -> Run | None:
        """The run of the agent's running ``execute``, if any."""
        return self._active_run

    async def task(self) -> Task:
        """The stored task as of its last event (a fresh copy).

        Raises:
            TaskNotFoundError: the task is gone (deleted) or was never made.
        """
        known = self._state is not None
        task = await self._store.get(self.task_id, owner=self.owner) if known else None
        if task is None:
            raise TaskNotFoundError(
                f"Task not found: {self.task_id!r}", metadata={"taskId": self.task_id}
            )
        return task

    # -- holds and runs -----------------------------------------------------------------------

    def hold(self) -> TaskHub:
        """Keep the hub in use for a ``with hub.hold():`` block (a call, or a stream's life)."""
        self._holds += 1
        return self

    def __enter__(self) -> TaskHub:
        return self

    def __exit__(self, *exc: object) -> None:
        self._release()

    def _release(self) -> None:
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
        elif self._state is None:
            self.finish_all(run.lost or InternalError("The agent stopped without replying"))
        elif self._run_task is None and not self._canceling and not self._follow:
            self.finish_all()  # no run is left here to log more (e.g. it replied, turn still open)
        if not (self._canceling and run is self._cancel_target):
            run.settle()  # the run the cancel stops is released once the cancel is recorded
        if self._follow:  # the rest, if any, is written elsewhere: look at the store
            for sub in self._subscribers:
                sub.poke()
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

    def drop_run(self) -> bool:
        """Cancel ``execute`` at once and take none of its events (its lease ended); whether it ran."""
        running = self._run_task
        if running is None or running.done():
            return False
        if self._active_run is not None:
            self._active_run.close()
        running.cancel()
        return True

    def supersede_run(self) -> None:
        """Drop a run whose turn ended but that has not returned, and forget it (a follow-up's)."""
        self.drop_run()
        self._run_task = self._active_run = None

    @contextlib.contextmanager
    def cancelling(self) -> Iterator[None]:
        """For the ``with`` block, a cancel is under way (see the module docstring)."""
        execute_run = self._cancel_target = self._active_run
        self._canceling = True
        try:
            yield
        finally:
            self._canceling, self._cancel_target = False, None
            if execute_run is not None and self._active_run is not execute_run:
                execute_run.settle()  # it ended meanwhile; a refused cancel leaves it running

    # -- streams ------------------------------------------------------------------------------

    def open_stream(
        self,
        history_length: int | None = None,
        *,
        snapshot: Snapshot | None = None,
        after: int | None = None,
    ) -> Subscription:
        """Open a stream for a stream writer; call with :attr:`lock` held.

        It starts from ``snapshot`` (the task, spec 3.1.6), from the events ``after`` a number
        (``Last-Event-ID``), or else from event 1 (a new task's stream). The subscription holds
        the hub until it is closed.
        """
        sub = Subscriber(
            self._store,
            self.task_id,
            self.owner,
            self._queue_size,
            history_length,
            after=after or 0,
            exists=self._state is not None,
            follow=(lambda: self._run_task is None) if self._follow else None,
        )
        if snapshot is not None:
            sub.start_from(snapshot)
        self._subscribers.append(sub)
        self._holds += 1  # until the stream closes
        return Subscription(sub, lambda: self._close_stream(sub))

    def _close_stream(self, sub: Subscriber) -> None:
        self.unsubscribe(sub)
        self._release()

    def unsubscribe(self, sub: Subscriber) -> None:
        """Close a stream's subscription; other streams and the task carry on."""
        sub.close()
        if sub in self._subscribers:
            self._subscribers.remove(sub)

    def finish_all(self, error: ProtocolError | None = None) -> None:
        """End every open stream after the events logged so far (with ``error`` last)."""
        for sub in self._subscribers:
            sub.finish(error)
        self._subscribers.clear()

    def _offer(self, events: Sequence[LogEvent]) -> None:
        for sub in self._subscribers:
            sub.offer(events)

    # -- events -------------------------------------------------------------------------------

    async def publish(self, event: AgentEvent, run: Run) -> bool:
        """Append ``event`` to the task's log, tell the streams; ``False`` if it was refused."""
        async with self.lock:
            return await self.publish_locked(event, run)

    async def publish_locked(
        self, event: AgentEvent, run: Run, *, runtime_reason: str | None = None
    ) -> bool:
        """:meth:`publish` for a caller that holds :attr:`lock`.

        ``runtime_reason`` is set when the runtime writes ``event`` itself (a run's FAILED end,
        a CANCELED): why it does; a refusal is then logged as the runtime's, not the agent's.
        """
        refuse = functools.partial(self._refuse, event, runtime_reason)
        if run.closed:
            return refuse("the agent run that sent it has ended")
        if self._state is None:
            return await self._first_event(event, run, refuse)
        if isinstance(event, Task):
            return refuse("the task exists already; send status or artifact updates")
        try:
            done = await self._append(event)
        except (InvalidTransitionError, TaskNotFoundError) as exc:
            return refuse(str(exc))
        if isinstance(event, TaskStatusUpdateEvent):
            if is_settled(done.state):
                self._settle(run, done)
            else:
                run.resumed()  # the agent took the task out of its interrupted state itself
        return True

    async def add_message(self, message: Message) -> Snapshot:
        """Append the client's follow-up ``message``; hold :attr:`lock`.

        Returns:
            The task with the message, and the message's number.

        Raises:
            TaskNotFoundError: the task is gone.
            InvalidTransitionError: the task takes no more messages.
        """
        done = await self._append(message)
        snapshot = await self._store.snapshot(self.task_id, owner=self.owner)
        if snapshot is None:  # deleted since: as if it never existed
            raise TaskNotFoundError(metadata={"taskId": self.task_id})
        if snapshot.seq != done.events[-1].seq:
            raise InternalError(f"task {self.task_id} changed outside its hub")
        return snapshot

    async def _append(self, event: LogInput) -> Appended:
        push = self._on_push is not None
        done = await retry_unwritten(
            lambda: self._store.append(self.task_id, [event], push=push), self._write_retry
        )
        self._entered(done.state)
        if done.outbox and self._on_push is not None:
            self._on_push()
        self._offer(done.events)
        return done

    def _entered(self, state: TaskState) -> None:
        if state != self._state and self._on_state is not None:
            self._on_state(state)
        self._state = state

    def _refuse(self, event: AgentEvent, runtime_reason: str | None, why: str) -> bool:
        if runtime_reason is None:
            log.warning(
                "task %s: refused %s from the agent: %s", self.task_id, type(event).__name__, why
            )
        else:  # the runtime's own record, e.g. after the task ended by another writer
            log.info(
                "task %s: the runtime's %s (%s) is not recorded: %s",
                self.task_id,
                _described(event),
                runtime_reason,
                why,
            )
        return False

    async def _first_event(
        self, event: AgentEvent, run: Run, refuse: Callable[[str], bool]
    ) -> bool:
        if isinstance(event, Message):
            self._reply(event, run)
            return True
        task = first_task(event, self.task_id, run)
        if isinstance(task, str):
            return refuse(task)
        if isinstance(event, Task):
            await self._make_task(task, run)
            return True
        try:  # the task with its first event: one write (one commit on SQLite)
            await self._make_task(task, run, [event])
        except InvalidTransitionError as exc:  # nothing was stored: the task alone, then refuse
            await self._make_task(task, run)
            return refuse(str(exc))
        return True

    async def ensure_task(self, run: Run) -> None:
        """Make the SUBMITTED task from the run's message if the agent has not made it yet.

        For SendMessage with ``returnImmediately`` and a slow agent: its later events update the
        task (a Task or a Message as its first event is then refused, and logged).
        """
        async with self.lock:
            if self._state is not None or run.closed or run.message is None or run.lost:
                return  # made, over, or the store just failed to make it: no second wait
            now = now_timestamp()
            task = new_task(run.message, task_id=self.task_id, context_id=run.context_id, now=now)
            await self._make_task(task, run)

    async def _make_task(self, task: Task, run: Run, events: Sequence[LogInput] = ()) -> None:
        """Store a new task as event 1 of its log (``events`` after), offer it, release waiters."""
        configs, push = self._new_push_configs, self._on_push is not None
        try:
            done = await retry_unwritten(
                lambda: self._store.create(
                    task, owner=run.owner, push_configs=configs, push=push, events=events
                ),
                self._write_retry,
            )
        except StoreUnavailableError as exc:
            run.lost = exc  # nothing made: the caller is answered with it (Run.lost)
            raise
        run.lost = None  # made after all (the agent tried again)
        self._new_push_configs = []
        self._entered(done.state)
        if done.outbox and self._on_push is not None:
            self._on_push()
        self._offer(done.events)
        run.task_made()
        if is_settled(done.state):
            self._settle(run, done)

    def _reply(self, message: Message, run: Run) -> None:
        reply = copy.copy(message)
        reply.task_id = ""
        reply.context_id = reply.context_id or run.context_id
        reply.message_id = reply.message_id or new_uuid()
        body = codec.encode(StreamResponse(message=reply)) if self._subscribers else b""
        for sub in self._subscribers:
            sub.reply(body)
        self._subscribers.clear()
        run.answered(reply)

    def _settle(self, run: Run, done: Appended) -> None:
        """The task is terminal or interrupted: the turn is over; release the calls.

        A follow-up may come at once; the streams end by themselves.
        """
        self._subscribers.clear()
        run.turn_ended(done)
        if self._active_run is not None and self._active_run is not run:
            self._active_run.turn_ended(done)


def _described(event: AgentEvent) -> str:
    """``failed status`` for a status update, else the event's type name (for the log)."""
    if isinstance(event, TaskStatusUpdateEvent) and event.status is not None:
        return f"{state_word(event.status.state)} status"
    return type(event).__name__
