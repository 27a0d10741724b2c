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
* When the store cannot record CANCELED, the answer is the retryable -32000 (HTTP 503), and the
  record is tried again in the background (:mod:`a2a_wire.server._cancelling`).

Across processes (a store shared with other server processes, :mod:`a2a_wire.server._peers`):
when the task has no run in this process and another live process holds its lease, the cancel
is sent there with the request's ``metadata`` (``request_cancel``), and that process follows
the rules above (:func:`~a2a_wire.server._cancelling.cancel_here`) with its own run, its blocked SendMessage and its
streams, then replies. This process waits for the reply, ``cancel_grace_seconds`` plus
:data:`CANCEL_REACH_SECONDS` at most (sending the request once more when it has heard nothing
after :data:`~a2a_wire.server._peers.CANCEL_RESEND_SECONDS`, so that a request or reply lost
on the way costs that long), and answers as the holder would have: the CANCELED task,
or the holder's error (-32002 with the holder's message when its agent refused or the task
ended otherwise; the task then goes on, or stays as it ended). A holder that replies that the
task has no run there leaves the cancel to this process, which makes it as for a task without
a run (the rules above, with this process's hook). A holder that does not reply in time (it is
stalled or died) is overruled: unless the task is terminal by then, this process records
CANCELED itself; the holder's later events are refused, and the append that ends the task
ends the holder's lease, which stops its run there.
"""

from __future__ import annotations

import asyncio
import logging

from a2a_wire._protocol.states import is_terminal
from a2a_wire.errors import TaskNotFoundError, from_wire
from a2a_wire.server import _history
from a2a_wire.server._call import MethodCall
from a2a_wire.server._cancelling import cancel_here, not_cancelable, record_cancel
from a2a_wire.server._executor import RequestContext, request_context
from a2a_wire.server._hub import TaskHub
from a2a_wire.server._run import Run
from a2a_wire.server._runner import Runner
from a2a_wire.server.store._log import EventLogStore
from a2a_wire.server.store._shared import CancelReply
from a2a_wire.types import CancelTaskRequest, Task, TaskState

__all__ = ["CANCEL_REACH_SECONDS", "cancel_task"]

log = logging.getLogger("a2a_wire.server")

CANCEL_REACH_SECONDS = 2.0
"""Seconds on top of ``cancel_grace_seconds`` a process waits for another's cancel reply.

They cover the request's way there and the reply's way back: a notification each, or at worst
a check every ``poll_interval_seconds`` (1 s by default; keep it below this).
"""


async def cancel_task(call: MethodCall[CancelTaskRequest]) -> Task:
    """CancelTask (spec 3.1.5): cancel a task and return it as it ends up.

    Args:
        call: The call; ``request.metadata`` is handed to the agent's hook (in this process,
            or in the one running the task).

    Returns:
        The CANCELED task.

    Raises:
        TaskNotFoundError: no such task is visible to the caller.
        TaskNotCancelableError: the task is terminal, ended otherwise meanwhile, or the agent
            (here, or in the process running the task) refused.
        StoreUnavailableError: the store could not record CANCELED; it is recorded in the
            background once the store is back.
        ProtocolError: another error the process running the task answered.
    """
    runtime, info = call.runtime, call.info
    grace = call.settings.cancel_grace_seconds
    metadata = call.request.metadata
    async with runtime.hub(call.request.id, info.owner) as hub:
        peers = runtime.peers
        if peers is not None and hub.run_task is None:
            request = await peers.ask_holder(hub.task_id, metadata)
            if request is not None:
                loop = asyncio.get_running_loop()
                asked_at = loop.time()
                reply = await peers.wait_reply(request, grace + CANCEL_REACH_SECONDS)
                if reply is None or reply.outcome != "absent":
                    waited = loop.time() - asked_at
                    return await _cancelled_elsewhere(
                        runtime.runner, hub, call.store, reply, waited
                    )

        def context_for(task: Task) -> RequestContext:
            skill_id = runtime.skill_for_task(task, info)
            return request_context(
                info, task.id, task.context_id, task=task, metadata=metadata, skill_id=skill_id
            )

        return await cancel_here(runtime.runner, hub, grace, context_for)


async def _cancelled_elsewhere(
    runner: Runner, hub: TaskHub, store: EventLogStore, reply: CancelReply | None, waited: float
) -> Task:
    """Answer from the holder's reply; with none (after ``waited`` s), record CANCELED here."""
    if reply is not None and reply.outcome == "error":
        raise from_wire(reply.error)
    now = await store.snapshot(hub.task_id, owner=hub.owner)
    if now is None:
        raise TaskNotFoundError(
            f"Task not found: {hub.task_id!r}", metadata={"taskId": hub.task_id}
        )
    if is_terminal(state := now.task.status.state if now.task.status else TaskState.UNSPECIFIED):
        if state != TaskState.CANCELED:
            raise not_cancelable(now.task)
        return _history.view(now.task)
    log.warning(
        "task %s: the process running it did not answer the cancel in %.1f s; canceling here",
        hub.task_id,
        waited,
    )
    run = Run(hub, None, now.task.context_id, hub.owner)
    try:
        return await record_cancel(runner, hub, run)
    finally:
        run.close()
