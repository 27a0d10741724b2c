"""The event queue an agent writes to: one :class:`Run` per ``execute`` call or cancel.

A run is a source of events for one :class:`~a2a_wire.server._hub.TaskHub`: its
:meth:`Run.enqueue_event` hands each event to the hub, which applies, stores and streams it.
The futures of a run are what a SendMessage call waits on: :attr:`Run.first` (the task exists,
or the agent replied) and :attr:`Run.settled` (the task is terminal or interrupted, the agent
replied, or the run ended). Its phase (:mod:`a2a_wire.server._lifecycle`) says where it is in
its life; once ``ENDED`` (closed), a run takes no more events.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

from a2a_wire.server._executor import AgentEvent, RequestContext
from a2a_wire.server._lifecycle import Phase, Step, advance
from a2a_wire.server.store import Appended, StoreUnavailableError
from a2a_wire.types import Message, TaskState

__all__ = ["Publisher", "Run"]


class Publisher(Protocol):
    """What a run hands its events to: the task's :class:`~a2a_wire.server._hub.TaskHub`."""

    @property
    def state(self) -> TaskState | None:
        """The task's state; ``None`` until the task exists."""
        ...

    async def publish(self, event: AgentEvent, run: Run) -> bool:
        """Apply, store and stream ``event``; ``False`` if it was refused."""
        ...


class Run:
    """One source of events for a hub: an ``execute`` call, or a cancel (an :class:`EventQueue`).

    Attributes:
        message: The client's message that started the run (``None`` for a cancel).
        context_id: The context of the task the run works on.
        owner: The caller that owns a task this run creates.
        context: What ``execute`` was given (set when it starts; ``None`` for a cancel).
        first: Resolved when the task exists or the agent replied with a Message.
        settled: Resolved when the task is terminal or interrupted, the agent replied with a
            Message, or the run ended.
        commit: The store's answer to the append that last ended the run's turn (what a
            blocking SendMessage answers from), until the answer takes it.
        lost: The store's error when it failed before the task existed: nothing was
            acknowledged, so the caller is answered with it (retryable) and no task is made.
    """

    __slots__ = (
        "_phase",
        "commit",
        "_reply",
        "context",
        "context_id",
        "first",
        "hub",
        "lost",
        "message",
        "owner",
        "settled",
    )

    def __init__(
        self, hub: Publisher, message: Message | None, context_id: str, owner: str
    ) -> None:
        loop = asyncio.get_running_loop()
        self.hub = hub
        self.message = message
        self.context_id = context_id
        self.owner = owner
        self.context: RequestContext | None = None
        self.first: asyncio.Future[None] = loop.create_future()
        self.settled: asyncio.Future[None] = loop.create_future()
        self._reply: Message | None = None
        self._phase = Phase.WORKING
        self.commit: Appended | None = None
        self.lost: StoreUnavailableError | None = None
        if hub.state is not None:
            self.first.set_result(None)

    @property
    def reply(self) -> Message | None:
        """The agent's direct Message reply, if it gave one."""
        return self._reply

    @property
    def phase(self) -> Phase:
        """Where the run is in its life (:mod:`a2a_wire.server._lifecycle`)."""
        return self._phase

    @property
    def ending(self) -> bool:
        """``execute`` is over, and how the task ends is not recorded yet (``ENDING``)."""
        return self._phase is Phase.ENDING

    @property
    def closed(self) -> bool:
        """No more events are taken from this run (it is ``ENDED``)."""
        return self._phase is Phase.ENDED

    def step(self, step: Step) -> None:
        """Move to the phase after ``step``.

        Raises:
            RuntimeError: the step is illegal in the run's phase (a runtime bug).
        """
        self._phase = advance(self._phase, step)

    async def enqueue_event(self, event: AgentEvent) -> bool:
        """Apply, store and stream one event (see :meth:`TaskHub.publish`)."""
        return await self.hub.publish(event, self)

    def close(self) -> None:
        """Take no more events from this run (``STOPPED``; closing twice is fine)."""
        self._phase = advance(self._phase, Step.STOPPED)

    def answered(self, reply: Message) -> None:
        """The agent replied with ``reply`` instead of making a task: the turn and run are over."""
        self._reply = reply
        if self._phase in (Phase.WORKING, Phase.TURN_ENDED):
            self._phase = advance(self._phase, Step.SETTLED)
        self.close()
        self.settle()

    def turn_ended(self, commit: Appended) -> None:
        """``commit`` made the task interrupted or terminal: the turn is over; release the waiters."""
        if self._phase in (Phase.WORKING, Phase.TURN_ENDED):
            self._phase = advance(self._phase, Step.SETTLED)
            self.commit = commit
        self.settle()

    def resumed(self) -> None:
        """After its turn ended, the agent's event left the interrupted state: a new turn."""
        if self._phase is Phase.TURN_ENDED:
            self._phase = advance(self._phase, Step.RESUMED)

    def task_made(self) -> None:
        """Release whoever waits for the task to exist."""
        if not self.first.done():
            self.first.set_result(None)

    def settle(self) -> None:
        """Release whoever waits on this run."""
        for future in (self.first, self.settled):
            if not future.done():
                future.set_result(None)
