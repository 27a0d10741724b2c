"""The server's spans and metrics: a SERVER span per JSON-RPC call, an INTERNAL one per run.

A call's span is current while the method runs, so the agent run it starts (an asyncio task
copies the context) is its child; a stream's span ends with the stream. Nothing here runs when
:class:`~a2a_wire.telemetry.Telemetry` finds no provider (docs/observability.md).
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from aiohttp import web

from a2a_wire import codec, methods
from a2a_wire._protocol.jsonrpc import Call
from a2a_wire._protocol.wire import VERSION_HEADER
from a2a_wire.codec import ProtoMessage
from a2a_wire.server._executor import AgentExecutor, EventQueue, RequestContext
from a2a_wire.server._subscriber import Frame
from a2a_wire.server.store import StoreUnavailableError, shared_store
from a2a_wire.telemetry import Telemetry
from a2a_wire.telemetry._names import (
    AGENT_NAME,
    CONVERSATION_ID,
    LEASE_OUTCOME,
    METHOD_NAME,
    OPERATION_NAME,
    OTHER_METHOD,
    PROTOCOL_VERSION,
    STREAM_EVENT_COUNT,
    TASK_ID,
    TASK_STATE,
    Attributes,
    message_sizes,
    params_attributes,
    value_attributes,
)
from a2a_wire.telemetry._tracing import CallRecord, activated, extract, start_span
from a2a_wire.types import SendMessageResponse, StreamResponse, TaskState

try:  # used once a provider is found, which needs the API
    from opentelemetry.trace import Link, SpanKind
except ImportError:  # pragma: no cover - the telemetry extra is not installed
    pass

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.trace import SpanContext

    from a2a_wire.telemetry._metrics import Instruments

__all__ = ["TRACE_KEY", "ServerCall", "ServerTelemetry", "TracedAgent", "observing"]

TRACE_KEY: web.RequestKey[tuple[str, str]] = web.RequestKey("a2a_wire.trace")
"""The trace id and span id (32 and 16 hex digits) of a request's first sampled SERVER span."""

_PARENT: web.RequestKey[Context] = web.RequestKey("a2a_wire.telemetry.parent")
_SENDS = frozenset({methods.SEND_MESSAGE.name, methods.SEND_STREAMING_MESSAGE.name})
# A StreamResponse's JSON starts with the one member it holds (the codec writes no other).
_TASK_EVENTS = (b'{"task"', b'{"statusUpdate"', b'{"artifactUpdate"')
_STATE_EVENTS = (b'{"task"', b'{"statusUpdate"')
_NULL: AbstractContextManager[None] = contextlib.nullcontext()


def _new_task(params: object) -> bool:
    """Whether SendMessage ``params`` start a task (their message names none)."""
    message = params.get("message") if isinstance(params, Mapping) else None
    return isinstance(message, Mapping) and not message.get("taskId")


class ServerCall:
    """One JSON-RPC call served: its span and measurements (see :class:`ServerTelemetry`)."""

    __slots__ = ("_instruments", "_last_state", "_new_task", "_open", "events", "record")

    def __init__(self, record: CallRecord, instruments: Instruments | None, new_task: bool) -> None:
        self.record = record
        self._instruments = instruments
        self._new_task = new_task
        self._open = False
        self._last_state: bytes | None = None
        self.events = 0

    def answered(self, value: ProtoMessage) -> None:
        """The call's result: its ids and state on the span; a task it created counted."""
        self.record.add_value(value)
        if (
            self._new_task
            and self._instruments is not None
            and isinstance(value, SendMessageResponse)
            and value.task is not None
        ):
            self._instruments.tasks_created.add(1)

    def failed(self, exc: BaseException) -> None:
        """The error that answers the call (or ends its stream)."""
        self.record.fail(exc)
        if isinstance(exc, StoreUnavailableError) and self._instruments is not None:
            self._instruments.store_unavailable.add(1, {METHOD_NAME: self.record.method})

    def opened(self) -> None:
        """The stream's response started (an open stream until :meth:`end`)."""
        self._open = True
        if self._instruments is not None:
            self._instruments.active_streams.add(1)

    def sent(self, item: object) -> None:
        """One item written on the stream: an event, or the error that ends the stream."""
        if isinstance(item, BaseException):
            self.failed(item)
        elif isinstance(item, Frame):
            self._event(item.body)

    def _event(self, body: bytes) -> None:
        self.events += 1
        if self._instruments is not None:
            self._instruments.stream_events.add(1, {METHOD_NAME: self.record.method})
        if self.events == 1 and self._new_task and body.startswith(_TASK_EVENTS):
            if self._instruments is not None:
                self._instruments.tasks_created.add(1)
        if self.record.recording and body.startswith(_STATE_EVENTS):
            self._last_state = body

    def end(self) -> None:
        """End the span (a stream's: with its event count and last state) and measure."""
        record = self.record
        if record.recording and self._open:
            attrs: Attributes = {STREAM_EVENT_COUNT: self.events}
            if self._last_state is not None:
                value_attributes(codec.decode(StreamResponse, self._last_state), attrs)
            record.add(attrs)
        if self._open and self._instruments is not None:
            self._instruments.active_streams.add(-1)
            self._open = False
        record.end()

    @contextlib.contextmanager
    def active(self) -> Any:
        """The span current for the block, and the call ended after it."""
        try:
            with activated(self.record):
                yield
        finally:
            self.end()


def observing(call: ServerCall | None) -> AbstractContextManager[None]:
    """:meth:`ServerCall.active`, or nothing for a call that is not observed."""
    return _NULL if call is None else call.active()


TURN_LINKS = 10_000
"""Most tasks whose newest run's span is remembered (follow-up links, push deliveries)."""


class ServerTelemetry:
    """Starts the :class:`ServerCall` of each JSON-RPC call of an application.

    Args:
        telemetry: The providers.
        agent_name: The card's name (``gen_ai.agent.name``).
    """

    __slots__ = ("_runs", "agent_name", "telemetry")

    def __init__(self, telemetry: Telemetry, agent_name: str) -> None:
        self.telemetry = telemetry
        self.agent_name = agent_name
        self._runs: OrderedDict[str, SpanContext] = OrderedDict()

    def ran(self, task_id: str, span: SpanContext) -> SpanContext | None:
        """Remember ``span`` as the task's newest run here; return the one it replaces."""
        before = self._runs.pop(task_id, None)
        self._runs[task_id] = span
        if len(self._runs) > TURN_LINKS:
            self._runs.popitem(last=False)
        return before

    def last_run(self, task_id: str) -> SpanContext | None:
        """The span of the task's newest run in this process, if it is remembered."""
        return self._runs.get(task_id)

    def call(self, request: web.Request, call: Call) -> ServerCall | None:
        """The observed call, or ``None`` when telemetry is off."""
        tracer = self.telemetry.tracer()
        instruments = self.telemetry.instruments()
        if tracer is None and instruments is None:
            return None
        name = call.method.name if call.method is not None else OTHER_METHOD
        span = parent = None
        if tracer is not None:
            parent = request.get(_PARENT)
            if parent is None:  # once per HTTP request: the calls of a batch share it
                parent = request[_PARENT] = extract(request.headers)
            attrs: Attributes = {METHOD_NAME: name, AGENT_NAME: self.agent_name}
            version = request.headers.get(VERSION_HEADER) or request.query.get(VERSION_HEADER)
            if version:
                attrs[PROTOCOL_VERSION] = version[:32]
            params_attributes(call.params, attrs)  # at the start: samplers see them
            if self.telemetry.record_sizes and isinstance(call.params, Mapping):
                message_sizes(call.params.get("message"), attrs)
            span = start_span(tracer, name, SpanKind.SERVER, parent, attrs)
            if span is not None and TRACE_KEY not in request:
                ids = span.get_span_context()
                if ids.is_valid and ids.trace_flags.sampled:
                    request[TRACE_KEY] = (f"{ids.trace_id:032x}", f"{ids.span_id:016x}")
        histogram = instruments.server_duration if instruments is not None else None
        record = CallRecord(span, histogram, name, parent)
        new_task = name in _SENDS and _new_task(call.params)
        return ServerCall(record, instruments, new_task)

    def transition(self, state: TaskState) -> None:
        """A task of this server entered ``state`` (its hub calls this once per change)."""
        instruments = self.telemetry.instruments()
        if instruments is not None:
            instruments.task_transitions.add(1, {TASK_STATE: state.value})

    def watch_leases(self, store: object) -> None:
        """Count a shared store's lost leases and takeovers (nothing for a one-process store)."""
        shared = shared_store(store)
        if shared is not None and self.telemetry.enabled:
            shared.on_lease_lost(self.lease_lost)
            shared.on_takeover(self.took_over)

    def lease_lost(self, _task_id: str) -> None:
        """A lease this process held was found gone (a shared store's callback)."""
        instruments = self.telemetry.instruments()
        if instruments is not None:
            instruments.leases_lost.add(1)

    def took_over(self, _task_id: str, failed: bool) -> None:
        """This process ended another's expired lease (a shared store's callback)."""
        instruments = self.telemetry.instruments()
        if instruments is not None:
            instruments.lease_takeovers.add(1, {LEASE_OUTCOME: "failed" if failed else "released"})


class TracedAgent(AgentExecutor):
    """An agent whose runs are INTERNAL spans ``invoke_agent {name}``, counted and timed.

    A follow-up turn's span links to the span of the task's previous run in this process (each
    turn is a child of its own request, often in a trace of its own). Cancels pass through.

    Args:
        agent: The agent.
        observed: The server's telemetry (providers, agent name, the runs' spans).
    """

    def __init__(self, agent: AgentExecutor, observed: ServerTelemetry) -> None:
        self.agent = agent
        self.name = observed.agent_name
        self.telemetry = observed.telemetry
        self._observed = observed

    async def execute(self, context: RequestContext, events: EventQueue) -> None:
        """Run the agent inside its span (a child of the call that started the run), counted."""
        tracer = self.telemetry.tracer()
        instruments = self.telemetry.instruments()
        if tracer is None and instruments is None:
            await self.agent.execute(context, events)
            return
        name = f"invoke_agent {self.name}"
        span = None
        if tracer is not None:
            attrs: Attributes = {OPERATION_NAME: "invoke_agent", AGENT_NAME: self.name}
            attrs[TASK_ID] = context.task_id
            attrs[CONVERSATION_ID] = context.context_id
            before = self._observed.last_run(context.task_id)
            links = [Link(before)] if before is not None and context.task is not None else None
            span = start_span(tracer, name, SpanKind.INTERNAL, None, attrs, links)
            if span is not None:
                self._observed.ran(context.task_id, span.get_span_context())
        histogram = instruments.run_duration if instruments is not None else None
        record = CallRecord(span, histogram, name, measured={AGENT_NAME: self.name})
        if instruments is not None:
            instruments.active_runs.add(1)
        try:
            with activated(record):  # a client call of the agent's continues the trace
                await self.agent.execute(context, events)
        except Exception as exc:  # recorded, then the runner's to handle
            record.fail(exc)
            raise
        finally:
            record.end()
            if instruments is not None:
                instruments.active_runs.add(-1)

    async def cancel(self, context: RequestContext, events: EventQueue) -> None:
        """The agent's own cancel."""
        await self.agent.cancel(context, events)
