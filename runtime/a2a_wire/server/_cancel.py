"""CancelTask (spec 3.1.5): ask the agent, stop its run, record CANCELED.

Rules kept:

* An unknown task (or one the caller cannot see) is -32001.
* A terminal task is -32002, including one already canceled: repeating a cancel answers -32002
  and changes nothing (docs/prose-and-proto.md row 40).
* Otherwise the agent's :meth:`~a2a_wire.server._executor.AgentExecutor.cancel` hook runs first; it may
  emit the CANCELED status itself (with a message), or refuse by raising
  :class:`~a2a_wire.errors.TaskNotCancelableError`. A hook failing in any other way is logged
  and the cancel goes on.
* Then a still running ``execute`` is cancelled and awaited (``cancel_grace_seconds`` at most),
  and unless the task is terminal by then, the server records CANCELED itself.
* If the task reached another terminal state meanwhile, the answer is -32002.
* A SendMessage blocked on the task is released only once the cancel is recorded, so it
  answers with the CANCELED task.
"""

from __future__ import annotations

import logging
from typing import Any

from a2a_wire._protocol.states import is_terminal
from a2a_wire._protocol.tasks import with_history
from a2a_wire.errors import ProtocolError, TaskNotCancelableError
from a2a_wire.server._engine import CallInfo, Runtime
from a2a_wire.server._executor import RequestContext
from a2a_wire.server._hub import Run, TaskHub, task_view
from a2a_wire.types import Task, TaskState, TaskStatus, TaskStatusUpdateEvent

__all__ = ["cancel_task"]

log = logging.getLogger("a2a_wire.server")


def _state(task: Task) -> TaskState:
    return task.status.state if task.status is not None else TaskState.UNSPECIFIED


def _not_cancelable(task: Task) -> TaskNotCancelableError:
    state = _state(task)
    return TaskNotCancelableError(
        f"Task {task.id} is {state.value} and cannot be canceled",
        metadata={"taskId": task.id, "state": str(state.value)},
    )


async def cancel_task(
    runtime: Runtime, task_id: str, info: CallInfo, metadata: dict[str, Any] | None
) -> Any:
    """Cancel a task and return its JSON as it ends up.

    Args:
        runtime: The server's runtime.
        task_id: The task to cancel.
        info: The caller.
        metadata: ``CancelTaskRequest.metadata``, handed to the agent's hook.

    Returns:
        The CANCELED task.

    Raises:
        TaskNotFoundError: no such task is visible to the caller.
        TaskNotCancelableError: the task is terminal, ended otherwise meanwhile, or the agent
            refused.
    """
    hub = await runtime.acquire(task_id, info.caller)
    execute_run = hub.active_run
    run: Run | None = None
    try:
        task = hub.task
        assert task is not None
        if is_terminal(_state(task)):
            raise _not_cancelable(task)
        hub.canceling = True
        run = Run(hub, None, task.context_id, info.caller)
        context = RequestContext(
            message=None,
            task_id=task.id,
            context_id=task.context_id,
            task=with_history(task, None),
            caller=info.client_id,
            requested_extensions=info.extensions,
            metadata=metadata,
            tenant=info.tenant,
            skill_id=runtime.skill_for_task(task, info),
        )
        await _cancel_hook(runtime, context, run)
        await runtime.stop_run(hub)
        return await _record_cancel(hub, run)
    finally:
        hub.canceling = False
        if run is not None:
            run.closed = True
        if execute_run is not None:
            execute_run.settle()
        runtime.release(hub)


async def _cancel_hook(runtime: Runtime, context: RequestContext, run: Run) -> None:
    try:
        await runtime.executor.cancel(context, run)
    except ProtocolError:
        raise
    except Exception:  # the agent's code is a boundary; a broken hook must not block cancel
        log.exception("cancel hook failed on task %s; canceling anyway", context.task_id)


async def _record_cancel(hub: TaskHub, run: Run) -> Any:
    async with hub.lock:
        task = hub.task
        assert task is not None
        if not is_terminal(_state(task)):
            status = TaskStatus(state=TaskState.CANCELED)
            await hub.publish_locked(TaskStatusUpdateEvent(status=status), run)
        if _state(task) != TaskState.CANCELED:
            raise _not_cancelable(task)
        return task_view(task, None)
