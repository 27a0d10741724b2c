"""Sans-IO task lifecycle: the TaskState transition table and the one function that applies it.

A task (spec 4.1.1) moves through the states of spec 4.1.3. This module decides which moves are
legal and how each event changes a stored :class:`~a2a_wire.types.Task`; it does no I/O and
imports neither asyncio nor aiohttp, so the server, the stores and the tests share one rule set.

Theory of operation
-------------------
:data:`TRANSITIONS` maps every declared state to the states a status update may move it to. It
is the single source of truth: :func:`apply` consults it, and docs and tests enumerate it. The
rules it encodes:

* COMPLETED, FAILED, CANCELED and REJECTED are terminal (spec 4.1.3): nothing leaves them, and
  no artifact or message may be added afterwards.
* INPUT_REQUIRED and AUTH_REQUIRED are interrupted: the agent waits for the client (spec 3.4.3,
  7.6). They resume to WORKING, switch to each other, or end in a terminal state.
* WORKING, INPUT_REQUIRED and AUTH_REQUIRED may repeat themselves, so an agent can publish
  progress messages without changing state. SUBMITTED may not repeat: it is only the entry state
  set by :func:`new_task`.
* Every non-terminal state may be canceled (spec 3.1.5) or rejected (the proto allows a rejection
  after work has begun).
* UNSPECIFIED and states this version does not know (a newer peer's enum value) have no outgoing
  moves and are never a legal target; such a state is neither terminal nor interrupted.

:func:`apply` validates an event completely before touching the task, so an
:class:`InvalidTransitionError` always leaves the task as it was. It never mutates objects held
by the task or the event: it replaces the task's ``status`` and swaps in new ``artifacts`` and
``history`` lists. A shallow copy made earlier (see :func:`with_history`) therefore stays a
faithful snapshot.

Artifact chunks (spec 4.2.2): ``append=false`` stores the artifact, replacing one with the same
``artifactId`` in place; ``append=true`` extends the parts of the stored artifact with that id
(and takes the chunk's non-empty name, description, metadata and extensions), or, when the task
has no artifact with that id yet, starts it with this chunk (the A2A conformance kit's agents
send their first chunk with ``append=true``; docs/prose-and-proto.md row 20). ``lastChunk`` is a
hint for stream consumers: the stored artifact is the same with or without it, and the task has
nowhere to record that an artifact is closed, so a later chunk is still accepted.

History (spec 3.2.4): user messages, agent messages and status messages are appended in the
order they happen, with ``taskId`` and ``contextId`` filled in. :func:`with_history` trims a copy
for a response: ``None`` keeps everything, ``0`` nothing, ``n`` the last ``n`` messages.
"""

from __future__ import annotations

import copy

from a2a_wire._protocol.states import INTERRUPTED_STATES, TERMINAL_STATES, is_terminal
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
        raise InvalidTransitionError(f"task {task.id!r} cannot move from {current} to {target}")
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
        raise InvalidTransitionError(f"task {task.id!r} is {state}; cannot add {what}")
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
