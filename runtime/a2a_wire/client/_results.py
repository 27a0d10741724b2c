"""Sans-IO checks on what an agent returns: required fields, unknown kinds, stream order.

Spec 3.1.2, 3.1.6, 3.2.3, 3.5.2, 5.7. Parts and stream members of kinds this version does not
know are dropped with a log line rather than refused, so a newer agent stays readable; a state
it does not know never reads as finished (docs/internals/client.md).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

from a2a_wire._protocol.states import is_settled
from a2a_wire.client._errors import IncompleteStreamError
from a2a_wire.errors import InvalidAgentResponseError
from a2a_wire.types import (
    Artifact,
    ListTasksResponse,
    Message,
    SendMessageResponse,
    StreamResponse,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatusUpdateEvent,
)

__all__ = ["StreamTracker", "check_result", "drop_unknown_parts", "prepare"]

logger = logging.getLogger("a2a_wire.client")


Member = Task | Message | TaskStatusUpdateEvent | TaskArtifactUpdateEvent


def _stream_member(event: StreamResponse) -> tuple[str, Member] | None:
    if event.task is not None:
        return "task", event.task
    if event.message is not None:
        return "message", event.message
    if event.status_update is not None:
        return "statusUpdate", event.status_update
    if event.artifact_update is not None:
        return "artifactUpdate", event.artifact_update
    return None


_MEMBERS = (Task, Message, TaskStatusUpdateEvent, TaskArtifactUpdateEvent)


def _missing(result: object) -> list[str]:
    if isinstance(result, StreamResponse):  # first: one per stream event
        found = _stream_member(result)
        return [] if found is None else found[1].missing_fields(found[0] + ".")
    if isinstance(result, _MEMBERS):
        return result.missing_fields()
    if isinstance(result, SendMessageResponse):
        if result.task is not None:
            return result.task.missing_fields("task.")
        if result.message is not None:
            return result.message.missing_fields("message.")
        raise InvalidAgentResponseError("SendMessage result holds neither a task nor a message")
    missing: list[str] = []
    if isinstance(result, ListTasksResponse):
        for i, task in enumerate(result.tasks):
            task.missing_fields(f"tasks[{i}].", missing)
    return missing


def check_result(result: object) -> None:
    """Check the REQUIRED fields of a decoded result that the client relies on.

    Args:
        result: A decoded method result or stream event.

    Raises:
        InvalidAgentResponseError: Required fields are missing; the message lists their paths.
    """
    missing = _missing(result)
    if missing:
        shown = ", ".join(missing[:10]) + (" ..." if len(missing) > 10 else "")
        raise InvalidAgentResponseError(
            f"{type(result).__name__} from the agent lacks required fields: {shown}"
        )


def _task_holders(task: Task) -> Iterator[Message | Artifact]:
    if task.status is not None and task.status.message is not None:
        yield task.status.message
    yield from task.history
    yield from task.artifacts


def _holders(result: object) -> Iterator[Message | Artifact]:
    if isinstance(result, (SendMessageResponse, StreamResponse)):
        if result.task is not None:
            yield from _task_holders(result.task)
        if result.message is not None:
            yield result.message
    if isinstance(result, StreamResponse):
        result = result.status_update or result.artifact_update
    if isinstance(result, Task):
        yield from _task_holders(result)
    elif isinstance(result, Message):
        yield result
    elif isinstance(result, TaskStatusUpdateEvent):
        if result.status is not None and result.status.message is not None:
            yield result.status.message
    elif isinstance(result, TaskArtifactUpdateEvent):
        if result.artifact is not None:
            yield result.artifact
    elif isinstance(result, ListTasksResponse):
        for task in result.tasks:
            yield from _task_holders(task)


def drop_unknown_parts(result: object) -> int:
    """Remove parts whose content kind is unknown (``which_content() is None``), in place.

    Args:
        result: A decoded method result or stream event.

    Returns:
        How many parts were dropped (each holder that lost some is logged).
    """
    dropped = 0
    for holder in _holders(result):
        for part in holder.parts:
            if part.which_content() is None:
                break
        else:
            continue  # the usual case: every part of a known kind, nothing to copy
        known = [part for part in holder.parts if part.which_content() is not None]
        if len(known) != len(holder.parts):
            count = len(holder.parts) - len(known)
            label = (
                f"message {holder.message_id!r}"
                if isinstance(holder, Message)
                else f"artifact {holder.artifact_id!r}"
            )
            logger.info("skipped %d part(s) of an unknown content kind in %s", count, label)
            holder.parts = known
            dropped += count
    return dropped


def prepare(result: object) -> None:
    """Check a decoded result, then drop the parts of unknown kinds from it.

    The order matters: a message whose only part is of an unknown kind is still well-formed.

    Args:
        result: A decoded method result or stream event.

    Raises:
        InvalidAgentResponseError: See :func:`check_result`.
    """
    check_result(result)
    drop_unknown_parts(result)


class StreamTracker:
    """Follows one stream's events and decides whether its end is legitimate.

    A stream whose request names its task (a follow-up message, a subscription) may begin with
    an update of that task instead of the Task spec 3.1.2 asks for, as the a2a-sdk 1.3.0 server
    sends it: the update is read with one warning (docs/prose-and-proto.md, row 51), and
    :attr:`task` stays ``None`` until a Task arrives (fetch the task with GetTask when it is
    needed whole). Any other first update is an invalid agent response.

    Attributes:
        task_id: The stream's task (``""`` until a Task, or an update of the expected task,
            arrives).
        state: The last task state seen, or ``None``.
        task: The last Task snapshot seen (updates are not merged into it).
        ended_by_message: Whether the stream carried its one Message.
    """

    def __init__(self, *, allow_message: bool, expected_task: str = "") -> None:
        """Track a stream; ``allow_message`` is false for SubscribeToTask (Task first, always).

        ``expected_task`` is the task the request names (``""``: none), whose update may open
        the stream (see the class docstring).
        """
        self._allow_message = allow_message
        self.expected_task = expected_task
        self.task_id = ""
        self.state: TaskState | None = None
        self.task: Task | None = None
        self.ended_by_message = False

    @property
    def finished(self) -> bool:
        """Whether the stream may end now without being incomplete."""
        return self.ended_by_message or (self.state is not None and is_settled(self.state))

    def continue_from(self, previous: StreamTracker) -> None:
        """Take over the task of an earlier stream that this one resumes after its last event.

        A stream opened with ``Last-Event-ID`` may begin with an update instead of a Task: its
        events continue ``previous``'s, so they must name the same task.

        Args:
            previous: The tracker of the stream that dropped.
        """
        self.task_id, self.state, self.task = previous.task_id, previous.state, previous.task

    def accept(self, event: StreamResponse) -> bool:
        """Record an event.

        Args:
            event: A decoded, checked stream event.

        Returns:
            ``False`` if the event has no member this version knows and must be skipped.

        Raises:
            InvalidAgentResponseError: The event breaks the stream's order rules.
        """
        found = _stream_member(event)
        if found is None:
            logger.info("skipped a stream event of a kind this version does not know")
            return False
        kind, member = found
        if self.ended_by_message:
            raise InvalidAgentResponseError(f"{kind} event after the stream's Message")
        if isinstance(member, Message):
            if self.task_id or not self._allow_message:
                raise InvalidAgentResponseError("Message event in a task stream")
            self.ended_by_message = True
        elif isinstance(member, Task):
            if self.task_id and member.id != self.task_id:
                raise InvalidAgentResponseError(f"stream of task {self.task_id!r} sent another")
            self.task_id, self.task = member.id, member
            self.state = member.status.state if member.status is not None else None
        else:
            self._accept_update(kind, member)
        return True

    def _accept_update(
        self, kind: str, event: TaskStatusUpdateEvent | TaskArtifactUpdateEvent
    ) -> None:
        if not self.task_id:
            if not self.expected_task or event.task_id != self.expected_task:
                raise InvalidAgentResponseError(f"stream starts with {kind}, not a Task or Message")
            logger.warning(
                "the stream of task %r starts with %s, not the Task (spec 3.1.2); read anyway,"
                " as the a2a-sdk server sends a follow-up turn",
                self.expected_task,
                kind,
            )
            self.task_id = self.expected_task
        if event.task_id != self.task_id:
            raise InvalidAgentResponseError(
                f"{kind} for task {event.task_id!r} in the stream of task {self.task_id!r}"
            )
        if isinstance(event, TaskStatusUpdateEvent) and event.status is not None:
            self.state = event.status.state

    def end(self, *, cut_mid_event: bool) -> None:
        """Check the stream's close.

        Args:
            cut_mid_event: Whether the SSE decoder discarded a partial event at the close.

        Raises:
            IncompleteStreamError: The task had not settled and no Message came.
        """
        if not self.finished:
            raise IncompleteStreamError(self.task_id, self.state, cut_mid_event=cut_mid_event)
        if cut_mid_event:
            logger.info("ignored a partial event after the stream had finished")
