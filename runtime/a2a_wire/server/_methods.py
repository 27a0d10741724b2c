"""Method logic of the JSON-RPC server: one function per A2A method (spec 3.1, 9.4).

The glue calls :func:`call_unary` or :func:`call_stream` with the method's record; before any
work they apply, in order, the capability checks of spec 3.3.4, the decoding of ``params``
(REQUIRED checks), and the tenant check, which scopes the call info to the tenant so that data
is partitioned by it. The push-config methods are in :mod:`.push._configs`.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from a2a_wire import methods
from a2a_wire._protocol import jsonrpc as _jsonrpc
from a2a_wire._protocol.states import is_terminal, state_word
from a2a_wire.codec import ProtoMessage
from a2a_wire.errors import (
    ExtendedAgentCardNotConfiguredError,
    ExtensionSupportRequiredError,
    InvalidParamsError,
    PushNotificationNotSupportedError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from a2a_wire.methods import Method
from a2a_wire.server import _cancel, _history
from a2a_wire.server._call import MethodCall, Services
from a2a_wire.server._call_info import CallInfo
from a2a_wire.server._card import served_tenants
from a2a_wire.server._message_rules import check_message
from a2a_wire.server._runtime import Started
from a2a_wire.server._subscriber import Subscription
from a2a_wire.server.push import _configs as push_configs
from a2a_wire.server.store import TaskQuery, page_size
from a2a_wire.types import (
    AgentCard,
    GetExtendedAgentCardRequest,
    GetTaskRequest,
    ListTasksRequest,
    ListTasksResponse,
    SendMessageRequest,
    SendMessageResponse,
    SubscribeToTaskRequest,
    Task,
    TaskState,
)

__all__ = ["Capabilities", "call_stream", "call_unary"]

PUSH_METHODS: frozenset[Method[Any, Any]] = frozenset(
    {
        methods.CREATE_TASK_PUSH_NOTIFICATION_CONFIG,
        methods.GET_TASK_PUSH_NOTIFICATION_CONFIG,
        methods.LIST_TASK_PUSH_NOTIFICATION_CONFIGS,
        methods.DELETE_TASK_PUSH_NOTIFICATION_CONFIG,
    }
)


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What the agent card declares, read once (spec 3.3.4)."""

    streaming: bool
    push_notifications: bool
    extended_agent_card: bool
    required_extensions: tuple[str, ...]
    extensions: tuple[str, ...] = ()
    tenants: frozenset[str] = frozenset({""})

    @classmethod
    def of(cls, card: AgentCard) -> Capabilities:
        """Read the capabilities of ``card``; absent flags count as false."""
        tenants = frozenset(served_tenants(card))
        caps = card.capabilities
        if caps is None:
            return cls(False, False, False, (), (), tenants)
        required = tuple(ext.uri for ext in caps.extensions if ext.required)
        return cls(
            bool(caps.streaming),
            bool(caps.push_notifications),
            bool(caps.extended_agent_card),
            required,
            tuple(ext.uri for ext in caps.extensions if ext.uri),
            tenants,
        )

    def scope(self, request: Any, info: CallInfo) -> CallInfo:
        """``info`` scoped to the request's tenant.

        Raises:
            InvalidParamsError: the tenant is not served here.
        """
        tenant = getattr(request, "tenant", "")
        if tenant not in self.tenants:
            shown = tenant[:100]
            if not tenant:
                message = "This interface requires a tenant"
            else:
                message = f"Tenant {shown!r} is not served by this interface"
            raise InvalidParamsError(message, violations=[("tenant", "not a served tenant")])
        return info.with_tenant(tenant) if tenant or info.tenant else info

    def check(self, method: Method[Any, Any], info: CallInfo) -> None:
        """Refuse ``method`` if the card does not declare what it needs.

        Raises:
            UnsupportedOperationError: streaming or extended card not declared.
            PushNotificationNotSupportedError: push notifications not declared.
            ExtensionSupportRequiredError: a required extension is missing from the request.
        """
        if method.streaming and not self.streaming:
            raise UnsupportedOperationError(
                f"{method.name} needs streaming, which this agent does not declare"
            )
        if method in PUSH_METHODS and not self.push_notifications:
            raise PushNotificationNotSupportedError()
        if method is methods.GET_EXTENDED_AGENT_CARD and not self.extended_agent_card:
            raise UnsupportedOperationError("This agent does not declare an extended agent card")
        for uri in self.required_extensions:
            if uri not in info.extensions:
                raise ExtensionSupportRequiredError(
                    f"This agent requires the extension {uri}; declare it in A2A-Extensions",
                    metadata={"extension": uri},
                )


def _check_send(call: MethodCall[SendMessageRequest]) -> int | None:
    """The checks of SendMessage and SendStreamingMessage; the validated ``historyLength``."""
    config = call.request.configuration
    if config is None:
        return None
    length = _history.requested_length(config.history_length, "configuration.historyLength")
    if config.task_push_notification_config is not None and not call.push_notifications:
        raise PushNotificationNotSupportedError()
    return length


async def send_message(call: MethodCall[SendMessageRequest]) -> SendMessageResponse:
    """SendMessage (spec 3.1.1): the agent's Message, or its task.

    Waits until the task is terminal or interrupted, unless ``returnImmediately`` is set.
    """
    history_length = _check_send(call)
    request = call.request
    assert request.message is not None  # REQUIRED, checked when the params were decoded
    check_message(request.message, call.settings.max_parts_per_message)
    push = await push_configs.inline_push_config(call)
    async with call.runtime.send(request, call.info, push_config=push) as started:
        config = request.configuration
        if config is not None and config.return_immediately:
            await _first_or_submitted(started, call.settings.first_event_seconds)
        else:  # shielded: a repeat of the message (spec 3.3.1) waits on the same future
            await asyncio.shield(started.run.settled)
        return await started.outcome(history_length)


async def _first_or_submitted(started: Started, seconds: float) -> None:
    """Wait for the agent's first event, or after ``seconds`` make the SUBMITTED task."""
    try:
        async with asyncio.timeout(seconds):
            await asyncio.shield(started.run.first)
    except TimeoutError:
        await started.hub.ensure_task(started.run)
        await asyncio.shield(started.run.first)


async def send_streaming_message(call: MethodCall[SendMessageRequest]) -> Subscription:
    """SendStreamingMessage (spec 3.1.2): a stream of the task (or the one Message)."""
    history_length = _check_send(call)
    request = call.request
    assert request.message is not None  # REQUIRED, checked when the params were decoded
    check_message(request.message, call.settings.max_parts_per_message)
    push = await push_configs.inline_push_config(call)
    async with call.runtime.send(
        request, call.info, stream=True, history_length=history_length, push_config=push
    ) as started:
        assert started.stream is not None
        return started.stream


async def subscribe_to_task(call: MethodCall[SubscribeToTaskRequest]) -> Subscription:
    """SubscribeToTask (spec 3.1.6): the task now, then its events; terminal tasks -32004.

    With ``Last-Event-ID`` (docs/server.md, "Resuming a stream"): the events after that number,
    then the live ones, also for a terminal task; the task first when they were compacted.
    """
    after = _last_event_id(call.info.last_event_id)
    owner = call.info.owner
    async with call.runtime.hub(call.request.id, owner) as hub, hub.lock:
        if after is not None:
            subscription = hub.open_stream(after=after)
            try:
                await subscription.subscriber.prime()
            except BaseException:
                subscription.close()
                raise
            return subscription
        snapshot = await call.store.snapshot(hub.task_id, owner=owner)
        status = snapshot.task.status if snapshot is not None else None
        if snapshot is None or status is None:
            raise TaskNotFoundError(
                f"Task not found: {hub.task_id!r}", metadata={"taskId": hub.task_id}
            )
        if is_terminal(status.state):
            raise UnsupportedOperationError(
                f"Task {hub.task_id} is {state_word(status.state)}; there is nothing to subscribe to",
                metadata={"taskId": hub.task_id},
            )
        return hub.open_stream(snapshot=snapshot)


_EVENT_ID = re.compile(r"[0-9]{1,19}")
_MAX_EVENT_ID = 2**63 - 1  # what a store's integer column holds


def _last_event_id(value: str | None) -> int | None:
    """The event number a ``Last-Event-ID`` header names; ``None`` when absent or empty.

    Raises:
        InvalidParamsError: the value is not a non-negative integer.
    """
    if not value:
        return None
    if _EVENT_ID.fullmatch(value) is None or int(value) > _MAX_EVENT_ID:
        raise InvalidParamsError(
            "Last-Event-ID must be the id of an event of this task's stream",
            violations=[("Last-Event-ID", "must be a non-negative integer")],
        )
    return int(value)


async def get_task(call: MethodCall[GetTaskRequest]) -> Task:
    """GetTask (spec 3.1.3)."""
    request = call.request
    history_length = _history.requested_length(request.history_length)
    task = await call.store.get(request.id, owner=call.info.owner)
    if task is None:
        raise TaskNotFoundError(f"Task not found: {request.id!r}", metadata={"taskId": request.id})
    return _history.view(task, history_length)


def _task_query(request: ListTasksRequest) -> TaskQuery:
    size = page_size(request.page_size)
    _history.requested_length(request.history_length)
    status = request.status
    if not status.is_known:
        raise InvalidParamsError(
            "status is not a known TaskState", violations=[("status", "unknown TaskState")]
        )
    return TaskQuery(
        context_id=request.context_id,
        state=None if status == TaskState.UNSPECIFIED else status,
        status_after=request.status_timestamp_after,
        page_size=size,
        page_token=request.page_token,
    )


async def list_tasks(call: MethodCall[ListTasksRequest]) -> ListTasksResponse:
    """ListTasks (spec 3.1.4): filters, cursor pages, newest status first."""
    request = call.request
    query = _task_query(request)
    page = await call.store.list(query, owner=call.info.owner)
    artifacts = bool(request.include_artifacts)
    shown = [_history.view(t, request.history_length, artifacts=artifacts) for t in page.tasks]
    return ListTasksResponse(
        tasks=shown,
        next_page_token=page.next_page_token,
        page_size=query.page_size,
        total_size=page.total_size,
    )


async def extended_card(call: MethodCall[GetExtendedAgentCardRequest]) -> AgentCard:
    """GetExtendedAgentCard (spec 3.1.11, 13.3): the caller's card, or -32007."""
    if call.extended_card is None or not call.info.client_id:
        raise ExtendedAgentCardNotConfiguredError()
    return call.extended_card(call.info)


UnaryHandler = Callable[[MethodCall[Any]], Awaitable[ProtoMessage]]
StreamHandler = Callable[[MethodCall[Any]], Awaitable[Subscription]]

UNARY: dict[Method[Any, Any], UnaryHandler] = {
    methods.SEND_MESSAGE: send_message,
    methods.GET_TASK: get_task,
    methods.LIST_TASKS: list_tasks,
    methods.CANCEL_TASK: _cancel.cancel_task,
    methods.GET_EXTENDED_AGENT_CARD: extended_card,
    methods.CREATE_TASK_PUSH_NOTIFICATION_CONFIG: push_configs.create_push_config,
    methods.GET_TASK_PUSH_NOTIFICATION_CONFIG: push_configs.get_push_config,
    methods.LIST_TASK_PUSH_NOTIFICATION_CONFIGS: push_configs.list_push_configs,
    methods.DELETE_TASK_PUSH_NOTIFICATION_CONFIG: push_configs.delete_push_config,
}
"""The handler of each non-streaming method; it returns the method's ``result`` type."""
STREAMING: dict[Method[Any, Any], StreamHandler] = {
    methods.SEND_STREAMING_MESSAGE: send_streaming_message,
    methods.SUBSCRIBE_TO_TASK: subscribe_to_task,
}


def _call(
    services: Services, caps: Capabilities, method: Method[Any, Any], params: object, info: CallInfo
) -> MethodCall[Any]:
    """Check the capabilities, decode ``params`` and scope the caller to its tenant."""
    caps.check(method, info)
    request = _jsonrpc.decode_params(method, params)
    return MethodCall(request, caps.scope(request, info), services)


async def call_unary(
    services: Services, caps: Capabilities, method: Method[Any, Any], params: object, info: CallInfo
) -> ProtoMessage:
    """Check, decode and run a non-streaming method.

    Returns:
        The method's result (its ``Method.result`` type), for the caller to encode.

    Raises:
        ProtocolError: the JSON-RPC or A2A error that answers the call.
    """
    return await UNARY[method](_call(services, caps, method, params, info))


async def call_stream(
    services: Services, caps: Capabilities, method: Method[Any, Any], params: object, info: CallInfo
) -> Subscription:
    """Check, decode and open a streaming method.

    Raises:
        ProtocolError: the JSON-RPC or A2A error that answers the call.
    """
    return await STREAMING[method](_call(services, caps, method, params, info))
