"""CancelTask (spec 3.1.5): ask the agent, stop its run, record CANCELED.

An unknown task is -32001 and a terminal one -32002 (repeating a cancel changes nothing);
otherwise the agent's hook runs first, then a running ``execute`` is cancelled within
``cancel_grace_seconds`` and CANCELED recorded unless the task is terminal by then. When another
live process holds the task's lease, the cancel is sent there (:mod:`a2a_wire.server._peers`)
and this process waits at most ``cancel_grace_seconds`` plus :data:`CANCEL_REACH_SECONDS`
for the reply; a holder that does not reply in time is overruled. The rules in full:
docs/internals/server.md ("CancelTask").
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
from a2a_wire.server.store import CancelReply, EventLogStore
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
