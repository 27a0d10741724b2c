"""Agent runs: one asyncio task per ``execute``, started here and always ended here.

The :class:`Runner` keeps every run in :attr:`Runner.runs` until it is done (nothing is
fire-and-forget; :meth:`Runner.stop` cancels and awaits them at shutdown). However ``execute``
ends, the run's end follows the table of :mod:`a2a_wire.server._lifecycle` in a ``finally``: a
task left unfinished gets a FAILED status saying why (:data:`AGENT_FAILED`, :data:`AGENT_SILENT`,
:data:`AGENT_RETURNED_EARLY`, :data:`STORE_LOST`); a record the store refuses is retried in the
background from :data:`END_RETRY_SECONDS` to :data:`END_RETRY_MAX_SECONDS`; with a shared store
the lease is given back. The rules in full: docs/internals/server.md ("The runtime, the hubs
and the runner").
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from a2a_wire._protocol.states import is_settled, is_terminal
from a2a_wire.server._executor import AgentExecutor, RequestContext, agent_message
from a2a_wire.server._hub import TaskHub
from a2a_wire.server._lifecycle import Phase, Step
from a2a_wire.server._run import Run
from a2a_wire.server.store import SharedTaskStore, StoreUnavailableError
from a2a_wire.types import TaskState, TaskStatus, TaskStatusUpdateEvent

__all__ = [
    "AGENT_FAILED",
    "AGENT_RETURNED_EARLY",
    "AGENT_SILENT",
    "END_RETRY_MAX_SECONDS",
    "END_RETRY_SECONDS",
    "STORE_LOST",
    "Runner",
    "unrecorded",
]

log = logging.getLogger("a2a_wire.server")

AGENT_FAILED = "The agent failed while working on this task."
AGENT_SILENT = "The agent finished without replying."
AGENT_RETURNED_EARLY = "The agent stopped before the task was finished."
STORE_LOST = "The task store became unavailable while the agent worked on this task."

END_RETRY_SECONDS = 0.5
"""First pause before recording a run's end again when the store was unavailable."""
END_RETRY_MAX_SECONDS = 5.0
"""Longest pause between two such tries (the pause doubles each time)."""


def unrecorded(task_id: str) -> StoreUnavailableError:
    """The retryable error of a task whose end the store could not record yet."""
    return StoreUnavailableError(
        f"The task store is unavailable; the end of task {task_id} is not recorded yet. "
        "Resume the task (SubscribeToTask or GetTask) later",
        metadata={"taskId": task_id},
    )


class Runner:
    """Starts agent runs and ends every one of them (see the module docstring).

    Args:
        executor: The agent.
        leases: The store's leases, when it is shared with other processes.

    Attributes:
        runs: The asyncio tasks of the runs (and of cancels asked by other processes).
    """

    def __init__(self, executor: AgentExecutor, leases: SharedTaskStore | None) -> None:
        self.executor = executor
        self.leases = leases
        self.runs: set[asyncio.Task[None]] = set()

    def start(self, hub: TaskHub, run: Run, context: RequestContext) -> None:
        """Run ``execute`` for ``run`` on ``hub``'s task as an asyncio task of :attr:`runs`."""
        run.context = context
        task = asyncio.create_task(self._execute(hub, run, context))
        hub.start_run(run, task)
        self.runs.add(task)
        task.add_done_callback(functools.partial(self._run_done, hub, run))

    def spawn(self, work: Coroutine[Any, Any, None]) -> None:
        """Run other work of the runtime's as an asyncio task of :attr:`runs`."""
        task = asyncio.create_task(work)
        self.runs.add(task)
        task.add_done_callback(self.runs.discard)

    async def _execute(self, hub: TaskHub, run: Run, context: RequestContext) -> None:
        """Run the agent, then end the run: always (``finally``), whatever failed around it."""
        failure: str | None = None
        try:
            try:
                await self.executor.execute(context, run)
            except asyncio.CancelledError:
                raise
            except StoreUnavailableError:  # from enqueue_event; logged once per outage
                failure = STORE_LOST  # no task made: the hub set Run.lost, the caller retries
            except Exception:  # the agent's code is a boundary: its failure fails the task
                log.exception("agent failed on task %s", hub.task_id)
                failure = AGENT_FAILED
            await self._record_end(hub, run, failure)
            if self.leases is not None and hub.active_run is run:  # not superseded meanwhile
                await self.give_back_lease(hub.task_id)
        finally:
            # Cancelled: a cancel's CANCELED ends the lease, a lost lease is gone, and a store
            # that closes expires its leases; in every case the run takes no more events.
            run.close()

    async def _record_end(self, hub: TaskHub, run: Run, failure: str | None) -> None:
        """Record how the task ends after ``execute``, retrying while the store is unavailable.

        On the first failure (or at once, when the store failed under the agent) the streams and
        waiting calls are released with a retryable error naming the task; the tries go on until recorded, the lease is lost, or shutdown
        cancels the run.
        """

        def unrecorded_end() -> None:
            if run.phase is not Phase.ENDING:
                run.step(Step.UNRECORDED)
                hub.finish_all(unrecorded(hub.task_id))
                run.settle()

        if failure == STORE_LOST and hub.state is not None and not run.closed:
            unrecorded_end()  # the store failed already: answer now, not after another failure
        recorded = await self._until_recorded(
            hub.task_id, lambda: self._conclude(hub, run, failure), unrecorded_end
        )
        if recorded and not run.closed:
            run.step(Step.RECORDED if run.phase is Phase.ENDING else Step.RETURNED)

    def retry_record(self, hub: TaskHub, attempt: Callable[[], Awaitable[None]]) -> None:
        """Try ``attempt`` (a record the store refused) again in the background, holding ``hub``.

        The pause doubles from :data:`END_RETRY_SECONDS` to :data:`END_RETRY_MAX_SECONDS`; the
        tries stop once it is recorded, the task's lease is lost, or shutdown comes.
        """

        async def retry() -> None:
            with hub.hold():
                await asyncio.sleep(END_RETRY_SECONDS)
                await self._until_recorded(hub.task_id, attempt)

        self.spawn(retry())

    async def _until_recorded(
        self,
        task_id: str,
        attempt: Callable[[], Awaitable[None]],
        first_failure: Callable[[], None] | None = None,
    ) -> bool:
        """Run ``attempt`` until the store takes it; ``False`` once the lease is lost first."""
        pause = END_RETRY_SECONDS
        while True:
            try:
                await attempt()
            except StoreUnavailableError:
                if first_failure is not None:
                    first_failure()
                    first_failure = None
                if self.leases is not None and not self.leases.holds(task_id):
                    return False  # another process takes the task over by the lease rules
                await asyncio.sleep(pause)
                pause = min(pause * 2, END_RETRY_MAX_SECONDS)
                continue
            return True

    async def give_back_lease(self, task_id: str) -> None:
        """Give back this process's lease on the task, if held (else it is left to expire)."""
        assert self.leases is not None
        try:
            if self.leases.holds(task_id):
                await self.leases.release(task_id)
        except StoreUnavailableError:
            pass  # left to expire; the heartbeat renews only the leases of live runs

    async def _conclude(self, hub: TaskHub, run: Run, failure: str | None) -> None:
        """After ``execute``: fail a task the agent left unfinished, or made none for."""
        async with hub.lock:
            if run.closed:
                return
            state = hub.state
            if run.lost is not None and state is None:
                return  # the message never became a task
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
            event = TaskStatusUpdateEvent(status=status)
            await hub.publish_locked(event, run, runtime_reason=failure)

    def _run_done(self, hub: TaskHub, run: Run, task: asyncio.Task[None]) -> None:
        self.runs.discard(task)
        hub.end_run(run, task)

    async def stop(self, grace: float) -> None:
        """Cancel every run and wait ``grace`` seconds at most for them to end."""
        runs = list(self.runs)
        for task in runs:
            task.cancel()
        if runs:
            _, pending = await asyncio.wait(runs, timeout=grace)
            if pending:
                log.warning("%d agent runs ignored cancellation at shutdown", len(pending))
