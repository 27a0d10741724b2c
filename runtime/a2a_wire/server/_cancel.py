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

from a2a_wire._protocol.states import is_terminal
from a2a_wire.errors import TaskNotCancelableError
from a2a_wire.server import _history
from a2a_wire.server._call import MethodCall, request_context
from a2a_wire.server._hub import TaskHub
from a2a_wire.server._run import Run
from a2a_wire.types import CancelTaskRequest, Task, TaskState, TaskStatus, TaskStatusUpdateEvent

__all__ = ["cancel_task"]


def _state(task: Task) -> TaskState:
    return task.status.state if task.status is not None else TaskState.UNSPECIFIED


def _not_cancelable(task: Task) -> TaskNotCancelableError:
    state = _state(task)
    return TaskNotCancelableError(
        f"Task {task.id} is {state.value} and cannot be canceled",
        metadata={"taskId": task.id, "state": str(state.value)},
    )


async def cancel_task(call: MethodCall[CancelTaskRequest]) -> Task:
    """CancelTask (spec 3.1.5): cancel a task and return it as it ends up.

    Args:
        call: The call; ``request.metadata`` is handed to the agent's hook.

    Returns:
        The CANCELED task.

    Raises:
        TaskNotFoundError: no such task is visible to the caller.
        TaskNotCancelableError: the task is terminal, ended otherwise meanwhile, or the agent
            refused.
    """
    runtime, caller = call.runtime, call.caller
    async with runtime.hub(call.request.id, caller.owner) as hub:
        with hub.cancelling():
            task = await hub.task()
            if is_terminal(_state(task)):
                raise _not_cancelable(task)
            run = Run(hub, None, task.context_id, caller.owner)
            try:
                context = request_context(
                    caller,
                    task.id,
                    task.context_id,
                    task=task,
                    metadata=call.request.metadata,
                    skill_id=runtime.skill_for_task(task, caller),
                )
                await runtime.cancel_hook(context, run)
                await hub.stop_run(call.settings.cancel_grace_seconds)
                return await _record_cancel(hub, run)
            finally:
                run.close()


async def _record_cancel(hub: TaskHub, run: Run) -> Task:
    async with hub.lock:
        if hub.state is None or not is_terminal(hub.state):
            status = TaskStatus(state=TaskState.CANCELED)
            await hub.publish_locked(TaskStatusUpdateEvent(status=status), run)
        task = await hub.task()
        if _state(task) != TaskState.CANCELED:
            raise _not_cancelable(task)
        return _history.view(task)
