"""The capability of a store that several server processes share: leases and cancel requests.

A one-process store (memory, SQLite) runs every task's executor in the process that holds the
store, so the server needs nothing more than :class:`~._log.EventLogStore`. A store that many
processes use at once (:class:`~._log_postgres.PostgresEventLog`) must also say which process
runs each task's executor, and carry a CancelTask (spec 3.1.5) from the process that got it to
that one. :class:`SharedTaskStore` is that extra part; the server looks for it once
(:func:`shared_store`) and wires it in (:mod:`a2a_wire.server._peers`), so the one-process
stores are untouched.

The rules a shared store keeps (the PostgreSQL store's are in :mod:`._log_postgres_lease` and
:mod:`._log_postgres_cancel`):

* **Leases.** Each running task (SUBMITTED, WORKING) is *leased* to the process running its
  executor: creating a running task, or moving one into a running state, leases it to the
  writing process; leaving it terminal or interrupted ends the lease, whoever writes.
  :meth:`SharedTaskStore.acquire` takes the lease before a follow-up message resumes an
  interrupted task, and fails while another process holds one.
* **Lease lost.** When the store finds that a lease this process held is gone (another process
  ended the task, or took it over after this one stalled), it calls the
  :meth:`SharedTaskStore.on_lease_lost` callbacks with the task id.
* **Cancel requests.** :meth:`SharedTaskStore.request_cancel` carries a
  :class:`CancelRequest` (with the CancelTask's ``metadata``) to the lease holder's
  :meth:`SharedTaskStore.on_cancel` callbacks, in whichever process it runs.
* **Cancel replies.** The holder answers each request once it has acted on it
  (:meth:`SharedTaskStore.reply_cancel`, a :class:`CancelReply`: done, or the error a CancelTask
  on the holder would have answered, or "the task does not run here"), and the asking process
  waits for that answer (:meth:`SharedTaskStore.wait_cancel_reply`) for a bounded time.

Callbacks are plain functions called on the event loop; they must not block.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

__all__ = ["CancelReply", "CancelRequest", "SharedTaskStore", "shared_store"]


@dataclass(frozen=True, slots=True)
class CancelRequest:
    """A CancelTask (spec 3.1.5) sent by one process to the process holding the task's lease.

    Attributes:
        id: The request's id, unique among requests (the asker makes it); the reply names it.
        task_id: The task to cancel.
        asker: The asking process's id; ``""`` for a request that wants no reply.
        metadata: The CancelTask's ``metadata``, for the holder's agent hook; ``None`` if absent.
    """

    id: str
    task_id: str
    asker: str
    metadata: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class CancelReply:
    """The lease holder's answer to a :class:`CancelRequest`.

    Attributes:
        outcome: ``"done"`` (CANCELED is recorded), ``"error"`` (the cancel failed there, as a
            CancelTask on the holder would have: the agent refused, or the task ended otherwise
            or is gone) or ``"absent"`` (the task has no run in the holder's process).
        error: With ``"error"``, the JSON-RPC error object the holder would have answered
            (``{"code", "message", "data"?}``); otherwise ``None``.
    """

    outcome: Literal["done", "error", "absent"]
    error: dict[str, Any] | None = None


@runtime_checkable
class SharedTaskStore(Protocol):
    """What a store shared by several processes adds (see the module docstring).

    Attributes:
        process_id: This process's id in leases and cancel requests.
    """

    process_id: str

    def holds(self, task_id: str) -> bool:
        """Whether this process holds the task's lease, as far as it knows (no I/O)."""
        ...

    async def acquire(self, task_id: str) -> bool:
        """Take (or renew) the task's lease for this process; ``False`` if another holds it."""
        ...

    async def release(self, task_id: str) -> bool:
        """Give up this process's lease; ``False`` if it held none."""
        ...

    async def lease_holder(self, task_id: str) -> str | None:
        """The process holding a live lease on the task, or ``None``."""
        ...

    async def request_cancel(self, request: CancelRequest) -> str | None:
        """Send ``request`` to the task's live lease holder; its process id, or ``None`` if none.

        Sending a request again (same id) delivers it again: the holder tells repeats apart.
        """
        ...

    async def reply_cancel(self, request: CancelRequest, reply: CancelReply) -> None:
        """Answer a request this process was sent (nothing is sent if it wants no reply)."""
        ...

    async def wait_cancel_reply(self, request_id: str, *, timeout: float) -> CancelReply | None:
        """Take the reply to a request this process sent; ``None`` if none came in ``timeout`` s."""
        ...

    def on_lease_lost(self, callback: Callable[[str], None]) -> None:
        """Call ``callback(task_id)`` when a lease this process held is found gone."""
        ...

    def on_cancel(self, callback: Callable[[CancelRequest], None]) -> None:
        """Call ``callback(request)`` for each cancel request sent to this process."""
        ...


def shared_store(store: object) -> SharedTaskStore | None:
    """``store`` as a :class:`SharedTaskStore` if it is one, else ``None``."""
    return store if isinstance(store, SharedTaskStore) else None
