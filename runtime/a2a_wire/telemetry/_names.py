"""Span, attribute and metric names, and the attributes read from A2A values.

Names follow OpenTelemetry's semantic conventions for A2A (``a2a.*``, reusing ``gen_ai.*`` and
``error.type``); docs/observability.md maps each one. Only identifiers and states are read:
never message text, parts, metadata or headers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from a2a_wire import codec
from a2a_wire.codec import ProtoMessage
from a2a_wire.errors import ProtocolError
from a2a_wire.types import Message, SendMessageResponse, StreamResponse, Task

__all__ = [
    "AGENT_NAME",
    "CONVERSATION_ID",
    "ERROR_TYPE",
    "INSTRUMENTATION_NAME",
    "LEASE_OUTCOME",
    "MESSAGE_ID",
    "MESSAGE_PART_COUNT",
    "MESSAGE_SIZE",
    "METHOD_NAME",
    "OPERATION_NAME",
    "OTHER_METHOD",
    "PROTOCOL_VERSION",
    "PUSH_ATTEMPT",
    "PUSH_CONFIG_ID",
    "PUSH_NOTIFICATION",
    "PUSH_OUTCOME",
    "REFERENCE_TASK_IDS",
    "SERVER_ADDRESS",
    "SERVER_PORT",
    "STORE_OPERATION",
    "STREAM_EVENT_COUNT",
    "TASK_ID",
    "TASK_STATE",
    "TENANT",
    "Attributes",
    "error_type",
    "message_sizes",
    "params_attributes",
    "value_attributes",
]

INSTRUMENTATION_NAME = "a2a_wire"
"""The name of a2a-wire's tracer and meter."""

METHOD_NAME = "a2a.method.name"
PROTOCOL_VERSION = "a2a.protocol.version"
TENANT = "a2a.tenant"
TASK_ID = "a2a.task.id"
TASK_STATE = "a2a.task.state"
MESSAGE_ID = "a2a.message.id"
REFERENCE_TASK_IDS = "a2a.message.reference_task_ids"
MESSAGE_PART_COUNT = "a2a.message.part.count"
MESSAGE_SIZE = "a2a.message.size"
PUSH_CONFIG_ID = "a2a.push.config.id"
PUSH_ATTEMPT = "a2a.push.attempt"
PUSH_OUTCOME = "a2a.push.outcome"
STORE_OPERATION = "a2a.store.operation"
LEASE_OUTCOME = "a2a.lease.outcome"

PUSH_NOTIFICATION = "SendPushNotification"
"""The span name of a push delivery: the sender's CLIENT span and the webhook's SERVER span."""
STREAM_EVENT_COUNT = "a2a.stream.event.count"
CONVERSATION_ID = "gen_ai.conversation.id"
AGENT_NAME = "gen_ai.agent.name"
OPERATION_NAME = "gen_ai.operation.name"
ERROR_TYPE = "error.type"
SERVER_ADDRESS = "server.address"
SERVER_PORT = "server.port"

OTHER_METHOD = "_OTHER"
"""The method name recorded for a method A2A does not define (names stay few)."""

MAX_ID_CHARS = 256
"""Longest identifier recorded; a longer one is cut (ids are the client's choice)."""

MAX_REFERENCES = 16
"""Most ``referenceTaskIds`` recorded; the first ones are kept."""

Attributes = dict[str, str | int | list[str]]


def error_type(exc: BaseException) -> str:
    """``error.type``: a JSON-RPC error's code (``"-32001"``), else the exception's class."""
    if isinstance(exc, ProtocolError):
        return str(exc.code)
    cls = type(exc)
    return (
        cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"
    )


def _put(attrs: Attributes, key: str, value: object) -> None:
    if isinstance(value, str) and value:
        attrs[key] = value[:MAX_ID_CHARS]


def _task(attrs: Attributes, task: Task) -> None:
    _put(attrs, TASK_ID, task.id)
    _put(attrs, CONVERSATION_ID, task.context_id)
    if task.status is not None:
        attrs[TASK_STATE] = task.status.state.value


def _references(attrs: Attributes, ids: object) -> None:
    if isinstance(ids, list):
        kept = [i[:MAX_ID_CHARS] for i in ids[:MAX_REFERENCES] if isinstance(i, str) and i]
        if kept:
            attrs[REFERENCE_TASK_IDS] = kept


def _message(attrs: Attributes, message: Message) -> None:
    _put(attrs, MESSAGE_ID, message.message_id)
    _put(attrs, TASK_ID, message.task_id)
    _put(attrs, CONVERSATION_ID, message.context_id)
    _references(attrs, message.reference_task_ids)


def value_attributes(value: ProtoMessage | None, attrs: Attributes) -> Attributes:
    """Add the identifiers and state an A2A request or result carries to ``attrs``.

    A Task gives its id, context id and state; a Message its message, task and context ids; a
    SendMessage request or response or a stream event what it holds; any other value its
    ``id``/``taskId`` (GetTask, CancelTask, push configs). Returns ``attrs``.
    """
    if value is None:
        return attrs
    if isinstance(value, Task):
        _task(attrs, value)
    elif isinstance(value, Message):
        _message(attrs, value)
    elif isinstance(value, SendMessageResponse | StreamResponse):
        if value.task is not None:
            _task(attrs, value.task)
        elif value.message is not None:
            _message(attrs, value.message)
        if isinstance(value, StreamResponse):
            update = value.status_update or value.artifact_update
            if update is not None:
                _put(attrs, TASK_ID, update.task_id)
                _put(attrs, CONVERSATION_ID, update.context_id)
            if value.status_update is not None and value.status_update.status is not None:
                attrs[TASK_STATE] = value.status_update.status.state.value
    else:
        message = getattr(value, "message", None)
        if isinstance(message, Message):
            _message(attrs, message)
        _put(attrs, TASK_ID, getattr(value, "task_id", None) or getattr(value, "id", None))
        _put(attrs, TENANT, getattr(value, "tenant", None))
    return attrs


def message_sizes(message: object, attrs: Attributes) -> Attributes:
    """Add a message's part count and its JSON size in bytes to ``attrs`` (opt-in, no content).

    ``message`` is a :class:`Message` or its parsed JSON; anything else adds nothing.
    """
    if isinstance(message, Message):
        attrs[MESSAGE_PART_COUNT] = len(message.parts)
        attrs[MESSAGE_SIZE] = len(codec.encode(message))
    elif isinstance(message, Mapping):
        parts = message.get("parts")
        attrs[MESSAGE_PART_COUNT] = len(parts) if isinstance(parts, list) else 0
        attrs[MESSAGE_SIZE] = len(codec.dumps(message))
    return attrs


def params_attributes(params: object, attrs: Attributes) -> Attributes:
    """Add the identifiers of raw JSON-RPC ``params`` (as parsed, before decoding) to ``attrs``.

    Reads only ``tenant``, ``id``/``taskId`` and the message's ``messageId``, ``taskId``,
    ``contextId`` and ``referenceTaskIds``, and only string values. Returns ``attrs``.
    """
    if not isinstance(params, Mapping):
        return attrs
    _put(attrs, TENANT, params.get("tenant"))
    _put(attrs, TASK_ID, params.get("taskId") or params.get("id"))
    message: Any = params.get("message")
    if isinstance(message, Mapping):
        _put(attrs, MESSAGE_ID, message.get("messageId"))
        _put(attrs, TASK_ID, message.get("taskId"))
        _put(attrs, CONVERSATION_ID, message.get("contextId"))
        _references(attrs, message.get("referenceTaskIds"))
    return attrs
