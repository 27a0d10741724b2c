"""An agent's own Task as its first event: checked and given the request's ids (spec 3.1.1).

An agent may make its task by putting a :class:`~a2a_wire.types.Task` first on its queue
(:mod:`a2a_wire.server._executor`). The server keeps the ids it chose for the request: a Task
naming another id or context is refused, as is one starting in an unknown state; a missing
status is SUBMITTED, a missing timestamp is now, and an empty history starts with the client's
message. A status or artifact update as the first event makes the SUBMITTED task of the
request's message instead (:func:`first_task`); the hub stores the task with the update in one
write. Used by :mod:`a2a_wire.server._hub`.
"""

from __future__ import annotations

from a2a_wire._protocol.states import state_word
from a2a_wire._protocol.tasks import new_task, now_timestamp
from a2a_wire.server import _history
from a2a_wire.server._executor import AgentEvent
from a2a_wire.server._run import Run
from a2a_wire.types import Task, TaskState, TaskStatus

__all__ = ["adopt", "first_task"]


def first_task(event: AgentEvent, task_id: str, run: Run) -> Task | str:
    """The task an agent's first status, artifact or Task ``event`` makes, or why it makes none.

    Its own Task is checked by :func:`adopt`; an update makes the SUBMITTED task of the
    request's message (spec 3.1.1), which the update then applies to.
    """
    if isinstance(event, Task):
        return adopt(event, task_id, run)
    if run.message is None:
        return "no task to update"
    return new_task(run.message, task_id=task_id, context_id=run.context_id, now=now_timestamp())


def adopt(event: Task, task_id: str, run: Run) -> Task | str:
    """The task to store for the agent's first Task ``event`` on ``run``'s request.

    Returns:
        The checked copy with the request's ids, or why it is refused.
    """
    if event.id and event.id != task_id:
        return f"a new task must use the id {task_id!r} of the context"
    if event.context_id and event.context_id != run.context_id:
        return f"a new task must use the context id {run.context_id!r}"
    task = _history.view(event)
    task.id, task.context_id = task_id, run.context_id
    status = task.status or TaskStatus(state=TaskState.SUBMITTED)
    if not status.state.is_known or status.state == TaskState.UNSPECIFIED:
        return f"a task cannot start in state {state_word(status.state)}"
    now = now_timestamp()
    task.status = TaskStatus(
        state=status.state, message=status.message, timestamp=status.timestamp or now
    )
    if not task.history and run.message is not None:
        first = new_task(run.message, task_id=task.id, context_id=task.context_id, now=now)
        task.history = first.history
    return task
