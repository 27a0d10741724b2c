"""A SendMessage answer that reuses the JSON of the task the store has just written.

A blocking SendMessage answers with the task its agent settled, which the store folded and
encoded as the new snapshot in the same call (:attr:`~a2a_wire.server.store.Appended.task_json`).
Encoding that task again for the answer would write the same bytes a second time; this result
hands them to the JSON-RPC envelope as they are.
"""

from __future__ import annotations

from typing import Any

import orjson

from a2a_wire.server import _history
from a2a_wire.server.store import Appended
from a2a_wire.types import SendMessageResponse, Task

__all__ = ["StoredTaskResponse", "settled_answer"]


def settled_answer(done: Appended | None, history_length: int | None) -> SendMessageResponse | None:
    """The SendMessage answer from the commit that settled the task, if that commit folded it.

    Args:
        done: The task's last commit (``None``: none is known here).
        history_length: The requested history length (spec 3.2.4); ``None``: all of it.

    Returns:
        The answer, or ``None`` when the commit holds no fold (the caller reads the task).
    """
    if done is None or done.task is None:
        return None
    task, shown = done.task, history_length
    if done.task_json is not None and (shown is None or shown >= len(task.history)):
        return StoredTaskResponse(task, done.task_json)
    return SendMessageResponse(task=_history.view(task, history_length))


class StoredTaskResponse(SendMessageResponse):
    """A SendMessage result holding the task as the store just wrote it (its JSON too).

    :meth:`to_dict` splices that JSON (``orjson.Fragment``) instead of encoding the task again;
    the answer's bytes are the same. Only for a task the answer shows whole (no history cut).

    Args:
        task: The folded task.
        encoded: ``codec.encode(task)``, as the store wrote it.
    """

    __slots__ = ("_encoded",)

    def __init__(self, task: Task, encoded: bytes) -> None:
        super().__init__(task=task)
        self._encoded = encoded

    def to_dict(self) -> dict[str, Any]:
        """``{"task": <the stored JSON>}``, ready for :func:`a2a_wire.codec.dumps`."""
        return {"task": orjson.Fragment(self._encoded)}
