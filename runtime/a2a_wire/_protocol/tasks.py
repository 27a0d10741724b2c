"""Sans-IO task lifecycle: the TaskState transition table and the one function that applies it.

:data:`TRANSITIONS` is the single source of truth for the moves of spec 4.1.3. :func:`apply`
checks an event whole before touching the task and never mutates what the task or the event
hold (it swaps in new lists), so a shallow copy made earlier stays a faithful snapshot. No I/O,
no asyncio or aiohttp. The rules: docs/internals/protocol.md.
"""

from __future__ import annotations

import copy
import time

from a2a_wire._protocol.states import INTERRUPTED_STATES, TERMINAL_STATES, is_terminal, state_word
from a2a_wire.errors import A2AError
from a2a_wire.types import (
    Artifact,
    Message,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
    Timestamp,
)

__all__ = [
    "TRANSITIONS",
    "InvalidTransitionError",
    "apply",
    "new_task",
    "now_timestamp",
    "with_history",
    "without_artifacts",
]

_S = TaskState

# Where an active task may go: keep working, wait for the client, or end.
_ONWARD = frozenset({_S.WORKING}) | INTERRUPTED_STATES | TERMINAL_STATES

TRANSITIONS: dict[TaskState, frozenset[TaskState]] = {
    _S.UNSPECIFIED: frozenset(),
    _S.SUBMITTED: _ONWARD,
    _S.WORKING: _ONWARD,
    _S.INPUT_REQUIRED: _ONWARD,
    _S.AUTH_REQUIRED: _ONWARD,
    _S.COMPLETED: frozenset(),
    _S.FAILED: frozenset(),
    _S.CANCELED: frozenset(),
    _S.REJECTED: frozenset(),
}
"""For each state, the states a status update may move a task in that state to."""


class InvalidTransitionError(A2AError):
    """An event cannot be applied to a task; the task was left unchanged."""


def new_task(message: Message, *, task_id: str, context_id: str, now: Timestamp) -> Task:
    """Create a SUBMITTED task whose history is the message that started it.

    Args:
        message: The client's message; it is not modified (the history holds a copy).
        task_id: The server-assigned task id (spec 3.4.2).
        context_id: The context the task belongs to (spec 3.4.1).
        now: The status timestamp.

    Returns:
        The new task; its history message carries ``task_id`` and ``context_id``.
    """
    first = copy.copy(message)
    first.task_id = task_id
    first.context_id = context_id
    status = TaskStatus(state=TaskState.SUBMITTED, timestamp=now)
    return Task(id=task_id, context_id=context_id, status=status, history=[first])


def _state_of(task: Task) -> TaskState:
    return task.status.state if task.status is not None else TaskState.UNSPECIFIED


def _check_ids(task: Task, task_id: str, context_id: str, what: str) -> None:
    # Empty ids mean "this task"; a different non-empty id is a routing bug.
    if task_id and task_id != task.id:
        raise InvalidTransitionError(f"{what} for task {task_id!r} applied to task {task.id!r}")
    if context_id and task.context_id and context_id != task.context_id:
        raise InvalidTransitionError(
            f"{what} for context {context_id!r} applied to a task in context {task.context_id!r}"
        )


def _bind(message: Message, task: Task) -> Message:
    """The message as history stores it: a copy with the task's ids when they are missing."""
    _check_ids(task, message.task_id, message.context_id, "message")
    if message.task_id == task.id and message.context_id == task.context_id:
        return message
    bound = copy.copy(message)
    bound.task_id = task.id
    bound.context_id = task.context_id
    return bound


def _apply_status(task: Task, event: TaskStatusUpdateEvent, now: Timestamp) -> None:
    _check_ids(task, event.task_id, event.context_id, "status update")
    if event.status is None:
        raise InvalidTransitionError("status update without a status")
    current, target = _state_of(task), event.status.state
    if target not in TRANSITIONS.get(current, frozenset()):
        moving = f"{state_word(current)} to {state_word(target)}"
        raise InvalidTransitionError(f"task {task.id!r} cannot move from {moving}")
    message = _bind(event.status.message, task) if event.status.message is not None else None
    timestamp = event.status.timestamp if event.status.timestamp is not None else now
    task.status = TaskStatus(state=target, message=message, timestamp=timestamp)
    if message is not None:
        task.history = [*task.history, message]


def _merge_chunk(stored: Artifact, chunk: Artifact) -> Artifact:
    merged = copy.copy(stored)
    merged.parts = [*stored.parts, *chunk.parts]
    if chunk.name:
        merged.name = chunk.name
    if chunk.description:
        merged.description = chunk.description
    if chunk.metadata is not None:
        merged.metadata = chunk.metadata
    if chunk.extensions:
        merged.extensions = list(dict.fromkeys([*stored.extensions, *chunk.extensions]))
    return merged


def _apply_artifact(task: Task, event: TaskArtifactUpdateEvent) -> None:
    _check_ids(task, event.task_id, event.context_id, "artifact update")
    chunk = event.artifact
    if chunk is None or not chunk.artifact_id:
        raise InvalidTransitionError("artifact update without an artifact or an artifactId")
    index = next(
        (i for i, a in enumerate(task.artifacts) if a.artifact_id == chunk.artifact_id), None
    )
    artifacts = list(task.artifacts)
    if event.append and index is not None:
        artifacts[index] = _merge_chunk(artifacts[index], chunk)
    elif index is None:
        artifacts.append(chunk)
    else:
        artifacts[index] = chunk
    task.artifacts = artifacts


def apply(
    task: Task,
    event: TaskStatusUpdateEvent | TaskArtifactUpdateEvent | Message,
    *,
    now: Timestamp,
) -> None:
    """Apply one event to ``task`` in place, after checking that it is legal.

    Args:
        task: The task to update.
        event: A status update (checked against :data:`TRANSITIONS`), an artifact update, or a
            message to append to the history. Its ``taskId``/``contextId`` must be empty or
            the task's own.
        now: The status timestamp used when a status update carries none.

    Raises:
        InvalidTransitionError: the event is illegal for the task's current state or belongs to
            another task; the task is unchanged.
    """
    if isinstance(event, TaskStatusUpdateEvent):
        _apply_status(task, event, now)
        return
    state = _state_of(task)
    if is_terminal(state):
        what = "an artifact" if isinstance(event, TaskArtifactUpdateEvent) else "a message"
        raise InvalidTransitionError(f"task {task.id!r} is {state_word(state)}; cannot add {what}")
    if isinstance(event, TaskArtifactUpdateEvent):
        _apply_artifact(task, event)
    else:
        task.history = [*task.history, _bind(event, task)]


def with_history(task: Task, history_length: int | None) -> Task:
    """A copy of ``task`` with its history trimmed for a response (spec 3.2.4).

    The copy is shallow: it shares messages, artifacts and the status with ``task``, which
    :func:`apply` never mutates, so it stays a snapshot. Treat it as read-only.

    Args:
        task: The stored task.
        history_length: ``None`` keeps all messages, ``0`` none, ``n`` the ``n`` most recent.

    Returns:
        The trimmed copy.

    Raises:
        ValueError: ``history_length`` is negative (the handler rejects it with -32602 first).
    """
    if history_length is not None and history_length < 0:
        raise ValueError("history_length must not be negative")
    view = copy.copy(task)
    if history_length is None:
        view.history = list(task.history)
    elif history_length == 0:
        view.history = []
    else:
        view.history = task.history[-history_length:]
    view.artifacts = list(task.artifacts)
    return view


def without_artifacts(task: Task) -> Task:
    """A shallow copy of ``task`` with no artifacts (ListTasks without ``includeArtifacts``).

    Args:
        task: The stored task.

    Returns:
        The copy; its ``artifacts`` key is absent when encoded (spec 3.1.4).
    """
    view = copy.copy(task)
    view.artifacts = []
    view.history = list(task.history)
    return view


def now_timestamp() -> Timestamp:
    """The current time with millisecond precision (spec 5.6.1)."""
    millis = time.time_ns() // 1_000_000
    return Timestamp(seconds=millis // 1000, nanos=(millis % 1000) * 1_000_000)
