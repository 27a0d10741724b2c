"""Server processes sharing one store: lost leases, cancels from elsewhere, follow-ups anywhere.

With a store shared by other server processes (a
:class:`~a2a_wire.server.store.SharedTaskStore`, such as PostgreSQL's) the runtime gets a
:class:`Peers`, which keeps this process's runs in step with the store's leases: a lost lease
stops the run, a cancel asked elsewhere is done here and answered (:meth:`Peers.ask_holder`,
:meth:`Peers.wait_reply`), and a follow-up takes the task's lease before it is recorded
(:meth:`Peers.take_lease`). With a one-process store nothing here runs. What a reader cannot
see here: a cancel request or its reply may be lost on the way, so the asker sends it once more
after :data:`CANCEL_RESEND_SECONDS` and the holder tells a repeat apart by its id. The rules in
full: docs/internals/server.md ("Processes sharing one store").
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import uuid
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from a2a_wire._protocol.states import is_settled
from a2a_wire.errors import ProtocolError
from a2a_wire.server import _history
from a2a_wire.server._cancelling import cancel_here
from a2a_wire.server._executor import RequestContext
from a2a_wire.server._hub import TaskHub
from a2a_wire.server._runner import Runner
from a2a_wire.server._settings import ServerSettings
from a2a_wire.server.store import CancelReply, CancelRequest, SharedTaskStore
from a2a_wire.types import Task

__all__ = ["CANCEL_RESEND_SECONDS", "REMEMBERED_REPLIES", "Peers"]

log = logging.getLogger("a2a_wire.server")

CANCEL_RESEND_SECONDS = 1.0
"""Seconds without a reply after which the asking process sends its cancel request once more.

What a lost request or reply costs, instead of the asker's whole wait (see the module docstring).
"""

REMEMBERED_REPLIES = 1024
"""Most cancel replies the holder keeps to answer a repeated request with (the latest ones)."""


class Peers:
    """The runtime's side of a shared store (see the module docstring).

    Args:
        hubs: The hub of a task in use here, by task id (``None`` when it has none).
        runner: Starts and ends this process's agent runs.
        settings: The server's settings (``cancel_grace_seconds``).
        store: The runtime's store, as a shared one; the callbacks are registered on it.
    """

    def __init__(
        self,
        hubs: Callable[[str], TaskHub | None],
        runner: Runner,
        settings: ServerSettings,
        store: SharedTaskStore,
    ) -> None:
        self.hubs = hubs
        self.runner = runner
        self.settings = settings
        self.store = store
        self.closed = False
        self._acting: set[str] = set()  # ids of the requests this process is acting on
        self._answered: OrderedDict[str, CancelReply] = OrderedDict()
        store.on_lease_lost(self._lease_lost)
        store.on_cancel(self._cancel_requested)

    # -- this process asks ----------------------------------------------------------------------

    async def ask_holder(
        self, task_id: str, metadata: dict[str, Any] | None
    ) -> CancelRequest | None:
        """Send a cancel to the other live process holding the task's lease, if one does.

        Args:
            task_id: The task to cancel.
            metadata: The CancelTask's ``metadata``, for the holder's agent hook.

        Returns:
            The request sent (wait for its reply with the store's ``wait_cancel_reply``), or
            ``None`` when no lease is live or this process holds it (the cancel is then this
            process's to make).
        """
        holder = await self.store.lease_holder(task_id)
        if holder is None or holder == self.store.process_id:
            return None
        request = CancelRequest(uuid.uuid4().hex, task_id, self.store.process_id, metadata)
        sent = await self.store.request_cancel(request)
        return request if sent is not None and sent != self.store.process_id else None

    async def wait_reply(self, request: CancelRequest, timeout: float) -> CancelReply | None:
        """The holder's reply to ``request``, waiting ``timeout`` seconds at most.

        With no reply after :data:`CANCEL_RESEND_SECONDS`, the request is sent once more.

        Returns:
            The reply, or ``None`` when none came in time, or when no live process holds the
            task's lease any more as it is sent again (the task ended, maybe by that cancel
            whose reply was lost, or its process died): the stored task then tells.

        Raises:
            StoreUnavailableError: the store failed while waiting or sending again.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        first = min(CANCEL_RESEND_SECONDS, timeout)
        reply = await self.store.wait_cancel_reply(request.id, timeout=first)
        if reply is not None or first >= timeout:
            return reply
        holder = await self.store.request_cancel(request)
        if holder is None:
            log.info(
                "task %s: no reply to the cancel request in %.1f s, and no process runs the "
                "task any more",
                request.task_id,
                first,
            )
            return await self.store.wait_cancel_reply(request.id, timeout=0)
        log.info(
            "task %s: no reply to the cancel request in %.1f s; sent it again",
            request.task_id,
            first,
        )
        left = max(0.0, deadline - loop.time())
        return await self.store.wait_cancel_reply(request.id, timeout=left)

    async def take_lease(self, task_id: str) -> bool:
        """Take the task's lease for a follow-up's run here; ``False`` if another holds it."""
        return await self.store.acquire(task_id)

    async def run_ended(self, task_id: str) -> None:
        """A run here has returned: give back a lease it leaves behind (none, usually)."""
        if self.store.holds(task_id):
            await self.store.release(task_id)

    def close(self) -> None:
        """Act on no more callbacks (the runtime is shutting down)."""
        self.closed = True

    # -- the store tells ------------------------------------------------------------------------

    def _lease_lost(self, task_id: str) -> None:
        hub = self.hubs(task_id)
        if self.closed or hub is None or hub.state is None or is_settled(hub.state):
            return  # nothing runs here, or the run here ended the task itself
        if self.store.holds(task_id):
            return  # taken again since (a follow-up's run here)
        if hub.drop_run():
            log.warning(
                "task %s: another process ended it or took it over; its agent run here stops",
                task_id,
            )

    def _cancel_requested(self, request: CancelRequest) -> None:
        hub = self.hubs(request.task_id)
        run = hub.active_run if hub is not None else None
        if self.closed or request.id in self._acting:
            return  # shutting down (the asker's bound applies), or a repeat: the first answers
        if (answered := self._answered.get(request.id)) is not None:
            log.info("task %s: the cancel request came again; answered again", request.task_id)
            self.runner.spawn(self._reply(request, answered))
            return
        if hub is None or run is None or run.context is None:
            log.info("task %s: a cancel request came, but it does not run here", request.task_id)
            self.runner.spawn(self._reply(request, CancelReply("absent")))
            return
        self._acting.add(request.id)
        self.runner.spawn(self._cancel(hub, run.context, request))

    async def _cancel(self, hub: TaskHub, started: RequestContext, request: CancelRequest) -> None:
        """A local CancelTask for another process, whose answer is sent back as a reply."""

        def context_for(task: Task) -> RequestContext:
            view = _history.view(task)
            return dataclasses.replace(
                started, message=None, task=view, configuration=None, metadata=request.metadata
            )

        grace = self.settings.cancel_grace_seconds
        try:
            with hub.hold():
                try:
                    await cancel_here(self.runner, hub, grace, context_for)
                except ProtocolError as exc:  # refused, ended otherwise, or gone: the asker says so
                    log.info("task %s: cancel request from another process: %s", hub.task_id, exc)
                    reply = CancelReply("error", exc.to_wire())
                else:
                    reply = CancelReply("done")
        finally:
            self._acting.discard(request.id)
        await self._reply(request, reply)

    async def _reply(self, request: CancelRequest, reply: CancelReply) -> None:
        self._answered[request.id] = reply  # a repeat of the request is answered the same
        self._answered.move_to_end(request.id)
        while len(self._answered) > REMEMBERED_REPLIES:
            self._answered.popitem(last=False)
        try:
            await self.store.reply_cancel(request, reply)
        except Exception as exc:  # a background task's boundary: the asker's bound applies
            log.warning("task %s: the cancel reply was not sent (%s)", request.task_id, exc)
