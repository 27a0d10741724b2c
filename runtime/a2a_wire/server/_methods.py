"""Method logic of the JSON-RPC server: one function per A2A method (spec 3.1, 9.4).

The HTTP glue in :mod:`a2a_wire.server._app` looks the method up once, as a
:class:`~a2a_wire.methods.Method` record, and calls :func:`call_unary` or :func:`call_stream`
with it. Those apply, in this order, before any work is done:

1. the capability checks of spec 3.3.4, from the agent card: streaming methods need
   ``capabilities.streaming`` (-32004), the four push-config methods need
   ``capabilities.pushNotifications`` (-32003), GetExtendedAgentCard needs
   ``capabilities.extendedAgentCard`` (-32004), and every extension the card marks ``required``
   must be named in ``A2A-Extensions`` (-32008);
2. decoding of ``params`` with REQUIRED checks (-32602 with a BadRequest detail);
3. the method's own validation and work.

Version negotiation (spec 3.6) is :func:`a2a_wire._protocol.wire.check_version`, applied by the
glue: ``A2A-Version`` must be ``1.0`` or ``1.0.x``; an absent or empty value means 0.3, which,
like any other version, is -32009.

The push-config methods and SendMessage's inline push config are in
:mod:`a2a_wire.server.push._configs`; a SendMessage carrying a push config answers -32003 when the card
does not declare push notifications (the spec is silent; this matches the methods).

GetExtendedAgentCard, with the capability declared, answers the card built for the caller
(:func:`a2a_wire.server._admission.extended_card_builder`), or -32007 when the server was not configured to
serve one (``SecurityConfig.extended_card``).

Tenants (spec 8.3.2; the spec does not say what a server does with a tenant it does not serve):
after decoding, a request's ``tenant`` must be one the served JSON-RPC interfaces name (``""``
only when an interface has none), else -32602 on ``tenant``. The call info is then scoped to it
(:meth:`~a2a_wire.server._engine.CallInfo.with_tenant`), so every handler sees the owner key of its
tenant and client: data is partitioned by tenant.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from a2a_wire import methods
from a2a_wire._protocol import jsonrpc as _jsonrpc
from a2a_wire._protocol.states import is_terminal
from a2a_wire.errors import (
    ExtendedAgentCardNotConfiguredError,
    ExtensionSupportRequiredError,
    InvalidParamsError,
    PushNotificationNotSupportedError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from a2a_wire.methods import Method
from a2a_wire.server import _cancel
from a2a_wire.server._card import served_tenants
from a2a_wire.server._engine import CallInfo, Runtime, Subscription
from a2a_wire.server._hub import Run, TaskHub, task_view
from a2a_wire.server._message_rules import check_message
from a2a_wire.server.push import _configs as push_configs
from a2a_wire.server.store._base import TaskQuery
from a2a_wire.server.store._paging import page_size
from a2a_wire.types import (
    AgentCard,
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    SendMessageRequest,
    SubscribeToTaskRequest,
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


def _check_history_length(value: int | None, field: str) -> None:
    if value is not None and value < 0:
        raise InvalidParamsError(
            f"{field} must not be negative", violations=[(field, "must be zero or more")]
        )


def _check_send(caps: Capabilities, request: SendMessageRequest) -> int | None:
    config = request.configuration
    if config is None:
        return None
    _check_history_length(config.history_length, "configuration.historyLength")
    if config.task_push_notification_config is not None and not caps.push_notifications:
        raise PushNotificationNotSupportedError()
    return config.history_length


async def send_message(
    runtime: Runtime, caps: Capabilities, request: SendMessageRequest, info: CallInfo
) -> dict[str, Any]:
    """SendMessage (spec 3.1.1): the agent's Message, or its task.

    Waits until the task is terminal or interrupted, unless ``returnImmediately`` is set.
    """
    history_length = _check_send(caps, request)
    config = request.configuration
    assert request.message is not None  # REQUIRED, checked when the params were decoded
    check_message(request.message, runtime.settings.max_parts_per_message)
    push = await push_configs.inline_push_config(runtime, request, info)
    hub, run, _ = await runtime.begin_message(request, info, stream=False, push_config=push)
    try:
        if config is not None and config.return_immediately:
            await _first_or_submitted(hub, run, runtime.settings.first_event_seconds)
        else:
            await run.settled
        return await runtime.result_of(hub, run, history_length)
    finally:
        runtime.release(hub)


async def _first_or_submitted(hub: TaskHub, run: Run, seconds: float) -> None:
    """Wait for the agent's first event, or after ``seconds`` make the SUBMITTED task."""
    try:
        await asyncio.wait_for(asyncio.shield(run.first), seconds)
    except TimeoutError:
        await hub.ensure_task(run)
        await run.first


async def send_streaming_message(
    runtime: Runtime, caps: Capabilities, request: SendMessageRequest, info: CallInfo
) -> Subscription:
    """SendStreamingMessage (spec 3.1.2): a stream of the task (or the one Message)."""
    _check_send(caps, request)
    assert request.message is not None  # REQUIRED, checked when the params were decoded
    check_message(request.message, runtime.settings.max_parts_per_message)
    push = await push_configs.inline_push_config(runtime, request, info)
    hub, _, sub = await runtime.begin_message(request, info, stream=True, push_config=push)
    assert sub is not None
    return Subscription(sub, hub, runtime)


async def subscribe_to_task(
    runtime: Runtime, caps: Capabilities, request: SubscribeToTaskRequest, info: CallInfo
) -> Subscription:
    """SubscribeToTask (spec 3.1.6): the task now, then its events; terminal tasks -32004."""
    hub = await runtime.acquire(request.id, info.caller)
    try:
        async with hub.lock:
            task = hub.task
            assert task is not None and task.status is not None
            if is_terminal(task.status.state):
                raise UnsupportedOperationError(
                    f"Task {task.id} is {task.status.state.value}; there is nothing to subscribe to",
                    metadata={"taskId": task.id},
                )
            sub = hub.subscribe()
    except BaseException:
        runtime.release(hub)
        raise
    return Subscription(sub, hub, runtime)


async def get_task(
    runtime: Runtime, caps: Capabilities, request: GetTaskRequest, info: CallInfo
) -> dict[str, Any]:
    """GetTask (spec 3.1.3)."""
    _check_history_length(request.history_length, "historyLength")
    task = await runtime.store.get(request.id, owner=info.caller)
    if task is None:
        raise TaskNotFoundError(f"Task not found: {request.id!r}", metadata={"taskId": request.id})
    return task_view(task, request.history_length)  # type: ignore[no-any-return]


def _task_query(request: ListTasksRequest) -> TaskQuery:
    size = page_size(request.page_size)
    _check_history_length(request.history_length, "historyLength")
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


async def list_tasks(
    runtime: Runtime, caps: Capabilities, request: ListTasksRequest, info: CallInfo
) -> dict[str, Any]:
    """ListTasks (spec 3.1.4): filters, cursor pages, newest status first."""
    query = _task_query(request)
    page = await runtime.store.list(query, owner=info.caller)
    artifacts = bool(request.include_artifacts)
    history = request.history_length
    return {
        "tasks": [task_view(task, history, artifacts) for task in page.tasks],
        "nextPageToken": page.next_page_token,
        "pageSize": query.page_size,
        "totalSize": page.total_size,
    }


async def cancel_task(
    runtime: Runtime, caps: Capabilities, request: CancelTaskRequest, info: CallInfo
) -> dict[str, Any]:
    """CancelTask (spec 3.1.5)."""
    return await _cancel.cancel_task(runtime, request.id, info, request.metadata)  # type: ignore[no-any-return]


async def extended_card(
    runtime: Runtime, caps: Capabilities, request: object, info: CallInfo
) -> dict[str, Any]:
    """GetExtendedAgentCard (spec 3.1.11, 13.3): the caller's card, or -32007."""
    if runtime.extended_card is None or not info.client_id:
        raise ExtendedAgentCardNotConfiguredError()
    return runtime.extended_card(info)


UnaryHandler = Callable[[Runtime, Capabilities, Any, CallInfo], Awaitable[dict[str, Any]]]
StreamHandler = Callable[[Runtime, Capabilities, Any, CallInfo], Awaitable[Subscription]]

UNARY: dict[Method[Any, Any], UnaryHandler] = {
    methods.SEND_MESSAGE: send_message,
    methods.GET_TASK: get_task,
    methods.LIST_TASKS: list_tasks,
    methods.CANCEL_TASK: cancel_task,
    methods.GET_EXTENDED_AGENT_CARD: extended_card,
    methods.CREATE_TASK_PUSH_NOTIFICATION_CONFIG: push_configs.create_push_config,
    methods.GET_TASK_PUSH_NOTIFICATION_CONFIG: push_configs.get_push_config,
    methods.LIST_TASK_PUSH_NOTIFICATION_CONFIGS: push_configs.list_push_configs,
    methods.DELETE_TASK_PUSH_NOTIFICATION_CONFIG: push_configs.delete_push_config,
}
STREAMING: dict[Method[Any, Any], StreamHandler] = {
    methods.SEND_STREAMING_MESSAGE: send_streaming_message,
    methods.SUBSCRIBE_TO_TASK: subscribe_to_task,
}


async def call_unary(
    runtime: Runtime, caps: Capabilities, method: Method[Any, Any], params: object, info: CallInfo
) -> dict[str, Any]:
    """Check, decode and run a non-streaming method; the result is its JSON value.

    Raises:
        ProtocolError: the JSON-RPC or A2A error that answers the call.
    """
    caps.check(method, info)
    request = _jsonrpc.decode_params(method, params)
    return await UNARY[method](runtime, caps, request, caps.scope(request, info))


async def call_stream(
    runtime: Runtime, caps: Capabilities, method: Method[Any, Any], params: object, info: CallInfo
) -> Subscription:
    """Check, decode and open a streaming method.

    Raises:
        ProtocolError: the JSON-RPC or A2A error that answers the call.
    """
    caps.check(method, info)
    request = _jsonrpc.decode_params(method, params)
    return await STREAMING[method](runtime, caps, request, caps.scope(request, info))
