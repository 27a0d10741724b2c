"""The extra part of a store several server processes share: leases and cancel requests.

The server looks for it once (:func:`shared_store`); the one-process stores do not implement it.
The rules a shared store keeps are in docs/internals/store.md, "Stores shared by several processes".
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

    def on_takeover(self, callback: Callable[[str, bool], None]) -> None:
        """Call ``callback(task_id, failed)`` for each expired lease of another process ended here.

        ``failed``: the task was running and was failed by the restart rule (else it was waiting
        for the client, and only its lease was removed).
        """
        ...

    def on_cancel(self, callback: Callable[[CancelRequest], None]) -> None:
        """Call ``callback(request)`` for each cancel request sent to this process."""
        ...


def shared_store(store: object) -> SharedTaskStore | None:
    """``store`` as a :class:`SharedTaskStore` if it is one, else ``None``."""
    return store if isinstance(store, SharedTaskStore) else None
