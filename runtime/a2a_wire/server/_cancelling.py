"""Cancelling a task whose run, if it has one, is in this process (spec 3.1.5).

The agent's ``cancel`` hook runs first (it may emit CANCELED itself, or refuse by raising
:class:`~a2a_wire.errors.TaskNotCancelableError`); then a running ``execute`` is cancelled and
awaited, and CANCELED is recorded unless the task is terminal by then. When the store cannot
record it, the caller gets the retryable :func:`cancel_unrecorded` error and the record is
retried in the background by the :class:`~a2a_wire.server._runner.Runner`: the run is already
stopped, so the task must not be left WORKING.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from a2a_wire._protocol.states import is_terminal, state_word
from a2a_wire.errors import ProtocolError, TaskNotCancelableError
from a2a_wire.server import _history
from a2a_wire.server._executor import AgentExecutor, RequestContext
from a2a_wire.server._hub import TaskHub
from a2a_wire.server._run import Run
from a2a_wire.server._runner import Runner
from a2a_wire.server.store import StoreUnavailableError
from a2a_wire.types import Task, TaskState, TaskStatus, TaskStatusUpdateEvent

__all__ = ["cancel_here", "cancel_unrecorded", "not_cancelable", "record_cancel"]

log = logging.getLogger("a2a_wire.server")


def _state(task: Task) -> TaskState:
    return task.status.state if task.status is not None else TaskState.UNSPECIFIED


def not_cancelable(task: Task) -> TaskNotCancelableError:
    """The -32002 error for ``task`` in its current state."""
    state = _state(task)
    return TaskNotCancelableError(
        f"Task {task.id} is {state_word(state)} and cannot be canceled",
        metadata={"taskId": task.id, "state": str(state.value)},
    )


def cancel_unrecorded(task_id: str) -> StoreUnavailableError:
    """The retryable error of a cancel whose CANCELED the store could not record yet."""
    return StoreUnavailableError(
        f"The task store is unavailable; the cancel of task {task_id} is accepted and will be "
        "recorded when the store is back. Read the task (GetTask) later",
        metadata={"taskId": task_id},
    )


async def cancel_here(
    runner: Runner,
    hub: TaskHub,
    grace: float,
    context_for: Callable[[Task], RequestContext],
) -> Task:
    """Cancel a task whose run, if it has one, is in this process (see the module docstring).

    Args:
        runner: This process's runs: its agent (whose ``cancel`` hook runs first) and the
            background tries of a record the store refused.
        hub: The task's hub, held by the caller.
        grace: Seconds to wait for a cancelled ``execute`` to stop.
        context_for: The hook's context for the stored task.

    Returns:
        The CANCELED task.

    Raises:
        TaskNotFoundError: the task is gone.
        TaskNotCancelableError: the task is terminal, ended otherwise meanwhile, or the agent
            refused.
        StoreUnavailableError: the store could not record CANCELED (tried again in the
            background).
    """
    with hub.cancelling():
        task = await hub.task()
        if is_terminal(_state(task)):
            raise not_cancelable(task)
        run = Run(hub, None, task.context_id, hub.owner)
        try:
            await _ask_agent(runner.executor, context_for(task), run)
            await hub.stop_run(grace)
            return await record_cancel(runner, hub, run)
        finally:
            run.close()


async def _ask_agent(executor: AgentExecutor, context: RequestContext, run: Run) -> None:
    """Give the agent's ``cancel`` hook its say; a refusal (ProtocolError) is raised."""
    try:
        await executor.cancel(context, run)
    except ProtocolError:
        raise
    except Exception:  # the agent's code is a boundary; a broken hook must not block cancel
        log.exception("cancel hook failed on task %s; canceling anyway", context.task_id)


async def record_cancel(runner: Runner, hub: TaskHub, run: Run) -> Task:
    """Record CANCELED from ``run`` unless the task is terminal; the task as it ends up.

    Raises:
        TaskNotCancelableError: it ended otherwise.
        StoreUnavailableError: the store could not record it (:func:`cancel_unrecorded`); the
            record is tried again in the background.
    """
    try:
        return await _record(hub, run)
    except StoreUnavailableError:
        runner.retry_record(hub, lambda: _record_later(hub, run.context_id))
        raise cancel_unrecorded(hub.task_id) from None


async def _record(hub: TaskHub, run: Run) -> Task:
    async with hub.lock:
        if hub.state is None or not is_terminal(hub.state):
            status = TaskStatus(state=TaskState.CANCELED)
            event = TaskStatusUpdateEvent(status=status)
            await hub.publish_locked(event, run, runtime_reason="CancelTask")
        task = await hub.task()
        if _state(task) != TaskState.CANCELED:
            raise not_cancelable(task)
        return _history.view(task)


async def _record_later(hub: TaskHub, context_id: str) -> None:
    """One background try of a refused cancel record; an ending other than CANCELED is final."""
    run = Run(hub, None, context_id, hub.owner)
    try:
        await _record(hub, run)
    except TaskNotCancelableError:
        log.info("task %s ended otherwise before its cancel could be recorded", hub.task_id)
    else:
        log.info("task %s: the cancel is recorded now that the store is back", hub.task_id)
    finally:
        run.close()
