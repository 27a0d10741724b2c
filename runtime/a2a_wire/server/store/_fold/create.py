"""What the backends' ``create`` share: the new task as stored, and the turn that may follow it."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass

from a2a_wire import codec
from a2a_wire.server.store._contract.log import (
    Appended,
    EventKind,
    EventLogStore,
    LogEvent,
    LogInput,
)
from a2a_wire.server.store._fold.events import task_frame
from a2a_wire.server.store._fold.history import trim_history
from a2a_wire.server.store._fold.keys import task_state
from a2a_wire.types import Task, TaskState

__all__ = ["NewTask", "first_turn", "new_task"]


@dataclass(frozen=True, slots=True)
class NewTask:
    """A task about to be created, as every store keeps it.

    Attributes:
        stored: The caller's task with its history trimmed (a shallow copy; the caller's
            history list stays as it was).
        state: Its state (UNSPECIFIED without a status).
        body: ``stored`` as JSON, the first snapshot.
        first: Event 1 of its log: the task as a ``task`` StreamResponse.
    """

    stored: Task
    state: TaskState
    body: bytes
    first: LogEvent


def new_task(task: Task, history_limit: int | None) -> NewTask:
    """``task`` as a store creates it, keeping at most ``history_limit`` messages.

    Raises:
        ValueError: the task has no id.
    """
    if not task.id:
        raise ValueError("a task needs an id to be stored")
    stored = copy.copy(task)  # trimming replaces the history list; the caller's stays
    trim_history(stored, history_limit)
    body = codec.encode(stored)
    return NewTask(stored, task_state(stored), body, LogEvent(1, EventKind.TASK, task_frame(body)))


async def first_turn(
    store: EventLogStore, created: Appended, task_id: str, events: Sequence[LogInput], push: bool
) -> Appended:
    """What a create took in, ``created``, followed by ``events`` appended as a second write.

    For a store whose :meth:`EventLogStore.create` cannot take ``events`` into its own
    transaction; the caller checked them before creating.
    """
    if not events:
        return created
    done = await store.append(task_id, events, push=push)
    logged = [*created.events, *done.events]
    return Appended(logged, created.outbox + done.outbox, done.state, done.task, done.task_json)
