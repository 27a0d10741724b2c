"""Reading event streams: SendStreamingMessage and SubscribeToTask (spec 3.1.2, 3.1.6, 9.4.2).

An :class:`EventStream` turns one ``text/event-stream`` response into ``StreamResponse`` values
(SSE framing, one JSON-RPC response per event, each result checked); the request is sent lazily,
and the response is closed when the stream ends, fails or is closed, or at the latest when it is
no longer referenced. A :class:`ResumableStream` re-subscribes after a drop, or after the
server's ``retry_after`` when it is unavailable for now (-32000), sending the last event's id as
``Last-Event-ID``; an update it already received is skipped. How it fits together:
docs/internals/client.md ("Streams"); the rules a caller sees: docs/client.md ("Resuming
streams").
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any, NoReturn, Protocol

from a2a_wire import codec, errors
from a2a_wire._protocol import jsonrpc as _jsonrpc
from a2a_wire._protocol.sse import SSEDecoder, SSEEvent, SSEProtocolError
from a2a_wire._protocol.states import is_interrupted, is_settled
from a2a_wire._protocol.wire import JSON_MEDIA_TYPES, LAST_EVENT_ID_HEADER, SSE_MEDIA_TYPE
from a2a_wire.client._errors import (
    IncompleteStreamError,
    ReadTimeoutError,
    ResponseTooLargeError,
    TransportError,
    UnexpectedContentTypeError,
    note_task,
)
from a2a_wire.client._http import RawResponse, StreamConnection, json_body
from a2a_wire.client._results import StreamTracker, prepare
from a2a_wire.methods import Method
from a2a_wire.telemetry._names import STREAM_EVENT_COUNT, TASK_ID, TASK_STATE, Attributes
from a2a_wire.telemetry._tracing import CallRecord
from a2a_wire.types import StreamResponse, SubscribeToTaskRequest, Task, TaskState

__all__ = ["EventStream", "ResumableStream", "Resubscription", "refuse_non_stream"]

logger = logging.getLogger("a2a_wire.client")

#: Opens the connection; called with the headers the stream adds (``Last-Event-ID``).
StreamOpener = Callable[[Mapping[str, str]], Awaitable[StreamConnection]]

#: Longest decimal event id read as a number (a sequence number fits in a 64-bit integer).
_MAX_SEQ_DIGITS = 18


def _event_seq(event_id: str | None) -> int | None:
    """An SSE event id read as a sequence number, or ``None`` when it is not plain decimal."""
    if event_id and len(event_id) <= _MAX_SEQ_DIGITS and event_id.isascii() and event_id.isdigit():
        return int(event_id)
    return None


def refuse_non_stream(raw: RawResponse, url: str, rid: int, method: Method[Any, Any]) -> NoReturn:
    """Raise what a streaming call's non-stream answer means (it always means failure).

    Args:
        raw: The whole response, which was not ``200 text/event-stream``.
        url: The request URL, for messages.
        rid: The request id.
        method: The streaming method called.

    Raises:
        ProtocolError: The answer is a JSON-RPC error (sent before the stream started).
        ClientError: Any other answer (status, content type, redirect, ...).
    """
    if 200 <= raw.status < 300 and raw.content_type not in JSON_MEDIA_TYPES:
        raise UnexpectedContentTypeError(raw.content_type, (SSE_MEDIA_TYPE,), status=raw.status)
    obj = json_body(raw, url)
    _jsonrpc.read_response(obj, rid, method)
    raise UnexpectedContentTypeError(raw.content_type, (SSE_MEDIA_TYPE,), status=raw.status)


class EventStream:
    """The events of one streaming call, as an async iterator and async context manager."""

    def __init__(
        self,
        opener: StreamOpener,
        *,
        method: Method[Any, StreamResponse],
        request_id: int,
        max_event_bytes: int,
        expected_task: str = "",
    ) -> None:
        """Prepare a stream; nothing is sent until it is entered or iterated.

        ``expected_task`` is the task the request names, whose update may open the stream
        (:class:`~a2a_wire.client._results.StreamTracker`).
        """
        self._opener = opener
        self._method = method
        self._rid = request_id
        self._limit = max_event_bytes
        self._decoder = SSEDecoder(max_event_bytes)
        self._conn: StreamConnection | None = None
        self._pending: deque[SSEEvent] = deque()
        self._eof = False
        self._done = False
        self._replay_floor: int | None = None
        self._extra_headers: dict[str, str] = {}
        self.tracker = StreamTracker(
            allow_message=method.name != "SubscribeToTask", expected_task=expected_task
        )
        #: The SSE ``id`` of the last event read (or the one this stream resumes after).
        self.last_event_id: str | None = None
        #: Whether the server answered with a stream (``False`` until then, or if it refused).
        self.opened = False
        #: The stream's span and duration once it is open (``None`` when telemetry is off).
        self.record: CallRecord | None = None
        self._events = 0

    def resume_after(self, last_event_id: str | None, task_id: str) -> EventStream:
        """Make this (not yet opened) stream resume after an event of an earlier stream.

        The stream sends ``last_event_id`` as ``Last-Event-ID``, starts out remembering it,
        skips replayed updates up to it, and may begin with an update of ``task_id`` (see the
        module docstring). ``None`` changes nothing.

        Args:
            last_event_id: The SSE id of the last event received, or ``None``.
            task_id: The task the earlier stream followed.

        Returns:
            This stream.

        Raises:
            RuntimeError: The stream was already opened.
        """
        if self._conn is not None or self._done:
            raise RuntimeError("resume_after() must come before the stream is opened")
        if last_event_id is not None:
            self._extra_headers = {LAST_EVENT_ID_HEADER: last_event_id}
            self._replay_floor = _event_seq(last_event_id)
            self.last_event_id = last_event_id
            self.tracker.task_id = task_id
        return self

    @property
    def task_id(self) -> str:
        """The stream's task id (``""`` until a Task arrived)."""
        return self.tracker.task_id

    @property
    def state(self) -> TaskState | None:
        """The last task state seen."""
        return self.tracker.state

    @property
    def finished(self) -> bool:
        """Whether the stream reached a legitimate end point (Message, terminal or interrupted)."""
        return self.tracker.finished

    @property
    def subscription(self) -> bool:
        """Whether this is a SubscribeToTask stream (its Task shows the task as it is now)."""
        return self._method.name == "SubscribeToTask"

    @property
    def follow_up(self) -> bool:
        """Whether this is a message stream whose request names its task (a follow-up turn)."""
        return not self.subscription and bool(self.tracker.expected_task)

    @property
    def events_read(self) -> int:
        """How many events this stream has yielded."""
        return self._events

    async def __aenter__(self) -> EventStream:
        await self._ensure_open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __aiter__(self) -> EventStream:
        return self

    async def __anext__(self) -> StreamResponse:
        if self._done:
            raise StopAsyncIteration
        try:
            event = await self._next()
        except BaseException as exc:
            note_task(exc, self.task_id)
            failed = isinstance(exc, Exception) and not isinstance(exc, StopAsyncIteration)
            if failed and self.record is not None:
                self.record.fail(exc)
            await self.aclose()
            raise
        self._events += 1
        return event

    async def aclose(self) -> None:
        """Stop reading and drop the connection."""
        self._done = True
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        record, self.record = self.record, None
        if record is not None:
            if record.recording:
                ended: Attributes = {STREAM_EVENT_COUNT: self._events}
                if self.task_id:
                    ended[TASK_ID] = self.task_id
                if self.state is not None:
                    ended[TASK_STATE] = self.state.value
                record.add(ended)
            record.end()

    async def _ensure_open(self) -> StreamConnection:
        if self._conn is None:
            if self._done:
                raise RuntimeError("the stream is closed")
            self._conn = await self._opener(self._extra_headers)
            self.opened = True
        return self._conn

    async def _next(self) -> StreamResponse:
        conn = self._conn if self._conn is not None else await self._ensure_open()
        while True:
            while self._pending:
                event = self._decode(self._pending.popleft())
                if event is not None:
                    return event
            if self._eof:
                self.tracker.end(cut_mid_event=self._decoder.discarded_partial)
                raise StopAsyncIteration
            chunk = await conn.read_chunk()
            if not chunk:
                self._decoder.close()
                self._eof = True
                continue
            try:
                self._pending.extend(self._decoder.feed(chunk))
            except SSEProtocolError as exc:
                raise ResponseTooLargeError("max_event_bytes", self._limit, status=200) from exc

    def _decode(self, sse: SSEEvent) -> StreamResponse | None:
        if not sse.data.strip():
            logger.debug("skipped an SSE event with empty data")
            self.last_event_id = sse.id
            return None
        try:
            obj = codec.loads(sse.data)
        except codec.JSONSyntaxError as exc:
            raise errors.InvalidAgentResponseError(f"stream event is not JSON: {exc}") from None
        event = _jsonrpc.read_response(obj, self._rid, self._method)
        prepare(event)
        if self._replayed(sse, event):
            return None
        self.last_event_id = sse.id
        return event if self.tracker.accept(event) else None

    def _replayed(self, sse: SSEEvent, event: StreamResponse) -> bool:
        """Whether ``event`` is an update already read before this stream's ``Last-Event-ID``."""
        floor = self._replay_floor
        if floor is None:
            return False
        seq = _event_seq(sse.id)
        if event.task is not None or seq is None or seq > floor:
            self._replay_floor = None  # past the replayed part (or a snapshot restarts the view)
            return False
        logger.debug("skipped event id %s, received before the reconnection", sse.id)
        return True


class Subscriber(Protocol):
    """Opens a SubscribeToTask stream (:meth:`A2AClient.subscribe_to_task`)."""

    def __call__(
        self, request: SubscribeToTaskRequest, /, *, last_event_id: str | None = None
    ) -> EventStream:
        """The stream of ``request``'s task, resumed after ``last_event_id`` if given."""
        ...


#: Failures after which a stream is worth re-subscribing to.
RESUMABLE_ERRORS: tuple[type[BaseException], ...] = (
    IncompleteStreamError,
    TransportError,
    ReadTimeoutError,
)


@dataclass(frozen=True, slots=True)
class Resubscription:
    """What a :class:`ResumableStream` is about to do, for its ``on_resume`` hook.

    ``str()`` of it is the one line the client logs (``info``, logger ``a2a_wire.client``).

    Attributes:
        task_id: The task re-subscribed to.
        cause: Why: the drop, or the server's :class:`~a2a_wire.errors.UnavailableError`.
        attempt: This re-subscription's number in a row (1 for the first since the last event).
        limit: The most re-subscriptions in a row (``max_resubscribes``).
        pause: Seconds before it is sent.
        last_event_id: The ``Last-Event-ID`` it sends (``None``: none).
        refused: The cause was the server's answer to the request of the stream (an HTTP 503),
            not an error event on an open stream.
    """

    task_id: str
    cause: BaseException
    attempt: int
    limit: int
    pause: float
    last_event_id: str | None
    refused: bool = False

    def __str__(self) -> str:
        cause = self.cause
        if isinstance(cause, errors.UnavailableError):
            what = "could not be opened" if self.refused else "ended"
            why = f"{what}: the server is unavailable for now ({cause.code} {_reason(cause)})"
        else:
            why = f"dropped ({type(cause).__name__})"
        after = "" if self.last_event_id is None else f" after event id {self.last_event_id!r}"
        return (
            f"stream of task {self.task_id!r} {why}; re-subscribing in {self.pause:g} s"
            f" ({self.attempt}/{self.limit}){after}"
        )


def _reason(exc: errors.ProtocolError) -> str:
    """The ErrorInfo ``reason`` an error carries (``reason`` of its class when none was sent)."""
    for detail in exc.data or []:
        if isinstance(detail, dict) and isinstance(detail.get("reason"), str):
            return str(detail["reason"])
    return exc.reason


class ResumableStream:
    """A stream that re-subscribes to its task after a drop (see the module docstring).

    Events before and after a re-subscription come as one sequence. The re-subscription sends
    ``Last-Event-ID`` when the dropped stream had event ids: the next event is then the one after
    the last received, or, from a server that does not resume, a fresh Task snapshot that
    replaces whatever the consumer built so far (always the case without ids). If the agent
    refuses the re-subscription with UnsupportedOperationError because the task has meanwhile
    settled, the Task fetched with GetTask is yielded as the final event.

    An :class:`~a2a_wire.errors.UnavailableError` (-32000) of a known task, from an error event
    or from a re-subscription refused with HTTP 503, re-subscribes too, after its
    ``retry_after`` seconds. Before each re-subscription ``on_resume`` (if given) is called with
    a :class:`Resubscription`.

    Budget (docs/client.md, "Resuming streams"): after a drop the pause before re-subscription
    ``n`` is ``retry_delay * 2 ** (n - 1)``, at most ``max_delay``, with jitter (a random
    value between half of it and all of it); the server's ``retry_after`` is used as it is.
    Drops and unavailable answers in a row share the budget: at most ``max_resubscribes``
    re-subscriptions and ``budget`` seconds of pauses; an update received (not a Task snapshot,
    which every re-subscription may begin with) starts it afresh. When
    it is spent the stream gives up: it raises the last failure, with a note (and a warning
    logged) that names the task and the last event id received.

    End of a turn (spec 11.7): with ``end_of_turn`` (the default) the events end after the one
    that reports the task INPUT_REQUIRED or AUTH_REQUIRED (a status update or a Task; not the
    Task that opens a follow-up's stream, which shows the task as it was before the message),
    even when the agent keeps the stream open; the stream is then closed. Without it they go on
    into the next turn, until the task is terminal or the server ends the stream.
    """

    def __init__(
        self,
        first: EventStream,
        *,
        subscribe: Subscriber,
        get_task: Callable[[str], Awaitable[Task]],
        max_resubscribes: int,
        retry_delay: float,
        max_delay: float = 8.0,
        budget: float = 30.0,
        on_resume: Callable[[Resubscription], None] | None = None,
        end_of_turn: bool = True,
    ) -> None:
        """Wrap ``first``; ``subscribe`` and ``get_task`` call the agent (the client's methods).

        ``max_resubscribes``, ``retry_delay``, ``max_delay`` and ``budget`` (seconds) bound the
        re-subscriptions in a row (see the class docstring).
        """
        self._current = first
        self._subscribe = subscribe
        self._get_task = get_task
        self._max = max_resubscribes
        self._delay = retry_delay
        self._max_delay = max_delay
        self._budget = budget
        self._in_a_row = 0
        self._paused = 0.0
        self._on_resume = on_resume
        self._end_of_turn = end_of_turn
        self._waiting = False
        self._task_id = ""
        self._done = False
        self.resubscribes = 0

    @property
    def task_id(self) -> str:
        """The task followed (``""`` until a Task arrived)."""
        return self._current.task_id or self._task_id

    @property
    def state(self) -> TaskState | None:
        """The last task state seen on the current stream."""
        return self._current.state

    @property
    def last_event_id(self) -> str | None:
        """The SSE ``id`` of the last event received, sent on the next re-subscription."""
        return self._current.last_event_id

    async def __aenter__(self) -> ResumableStream:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __aiter__(self) -> ResumableStream:
        return self

    async def aclose(self) -> None:
        """Close the current stream."""
        self._done = True
        await self._current.aclose()

    @property
    def turn_ended(self) -> bool:
        """Whether, with ``end_of_turn``, the last event left the task waiting for the client.

        The events end there (see the class docstring).
        """
        return self._end_of_turn and self._waiting

    def _note_turn(self, event: StreamResponse) -> None:
        """Whether ``event`` reports that the agent waits for the client.

        A status update says so, and so does a Task: of a subscription, of a new message's
        stream, or later in a follow-up's. The Task that opens a follow-up's SendStreamingMessage
        shows the task as it was before the message (still INPUT_REQUIRED): it is no answer yet.
        """
        current = self._current
        state = current.state
        waiting = state is not None and is_interrupted(state)
        if event.task is not None and current.follow_up and current.events_read == 1:
            waiting = False
        self._waiting = waiting and (event.status_update is not None or event.task is not None)

    async def __anext__(self) -> StreamResponse:
        if not self._done and self.turn_ended:
            await self.aclose()  # the agent's turn is over, whether or not its stream is
        while not self._done:
            try:
                event = await self._current.__anext__()
            except RESUMABLE_ERRORS as exc:
                if not await self._resubscribe(exc):
                    raise
            except errors.UnavailableError as exc:  # retryable: the server says when
                named = exc.metadata.get("taskId", "")
                if not await self._resubscribe(exc, float(exc.retry_after), named):
                    raise
            except errors.UnsupportedOperationError as exc:
                if not self.resubscribes:
                    raise
                self._waiting = False
                return await self._final_snapshot(exc)
            else:
                if event.task is None:  # an update past the snapshot: the stream is back
                    self._in_a_row, self._paused = 0, 0.0
                self._note_turn(event)
                return event
        raise StopAsyncIteration

    async def _resubscribe(
        self, exc: BaseException, pause: float | None = None, named: str = ""
    ) -> bool:
        """Re-subscribe after ``exc``, ``pause`` seconds later (default: the backoff's).

        Returns:
            ``False`` when there is nothing to resume (no task known) or the budget is spent
            (``exc`` then carries a note naming the task and its last event id).
        """
        task_id = self.task_id or named
        if not task_id:
            return False
        dropped = self._current
        last = dropped.last_event_id
        if pause is None:
            step = min(self._delay * 2**self._in_a_row, self._max_delay)
            pause = round(step * (0.5 + random.random() / 2), 3)  # noqa: S311 - jitter only
        if self._in_a_row >= self._max or self._paused + pause > self._budget:
            self._give_up(exc, task_id, last)
            return False
        self._in_a_row += 1
        self._paused += pause
        self.resubscribes += 1
        self._task_id = task_id
        await dropped.aclose()
        refused = not dropped.opened
        notice = Resubscription(task_id, exc, self._in_a_row, self._max, pause, last, refused)
        logger.info("%s", notice)
        if self._on_resume is not None:
            self._on_resume(notice)
        await asyncio.sleep(pause)
        self._current = self._subscribe(SubscribeToTaskRequest(id=task_id), last_event_id=last)
        if last is not None:
            self._current.tracker.continue_from(dropped.tracker)
        return True

    def _give_up(self, exc: BaseException, task_id: str, last: str | None) -> None:
        after = "no event id" if last is None else f"last event id {last!r}"
        line = (
            f"gave up re-subscribing to task {task_id!r} ({after}) after"
            f" {self._in_a_row} re-subscription(s) in a row and {self._paused:g} s of pauses"
            f" (max_resubscribes {self._max}, budget {self._budget:g} s)"
        )
        logger.warning("%s", line)
        exc.add_note(line)
        note_task(exc, task_id)

    async def _final_snapshot(self, refusal: errors.UnsupportedOperationError) -> StreamResponse:
        task = await self._get_task(self._task_id)
        if task.status is None or not is_settled(task.status.state):
            raise refusal
        self._done = True
        return StreamResponse(task=task)
