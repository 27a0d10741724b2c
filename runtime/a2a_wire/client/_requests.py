"""What :class:`~a2a_wire.client._client.A2AClient` puts into a request besides the JSON-RPC envelope.

Headers (spec 3.2.6, 3.6.1, 9.1, 9.2): ``A2A-Version``, ``Content-Type``, ``Accept``,
``User-Agent`` and, when the settings name any, ``A2A-Extensions``. They are set over the
credential provider's headers, so a provider cannot change the protocol headers. The names and
values come from :mod:`a2a_wire._protocol.wire`.

Tenant (spec 8.3.2): the interface's ``tenant`` is copied into a request whose ``tenant`` is
empty; an explicitly set tenant is kept. The caller's object is never changed.

:func:`text_request` builds the common SendMessageRequest: one user text part with a fresh id,
and the skill it is for in the message's metadata (``skillId``, where the a2a-wire server reads
it; the request's own ``metadata`` is not used for routing). :func:`task_of` names the task a
request is about, for the errors that carry a task id.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from multidict import CIMultiDict

from a2a_wire import codec
from a2a_wire._protocol.ids import new_uuid
from a2a_wire._protocol.wire import (
    EXTENSIONS_HEADER,
    JSON_MEDIA_TYPE,
    PROTOCOL_VERSION,
    SKILL_ID_KEY,
    VERSION_HEADER,
    join_extensions,
)
from a2a_wire.client._errors import note_task
from a2a_wire.client._settings import ClientSettings
from a2a_wire.errors import ClientError
from a2a_wire.types import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    SubscribeToTaskRequest,
)

__all__ = ["about_task", "request_headers", "task_of", "text_request", "with_tenant"]


class TenantRequest(codec.ProtoMessage, Protocol):
    """A request message with a ``tenant`` field (every params type of spec 3.1)."""

    tenant: str


P = TypeVar("P", bound=TenantRequest)


def with_tenant(request: P, tenant: str) -> P:
    """``request`` with ``tenant`` filled in when it has none (a shallow copy; spec 8.3.2)."""
    if not tenant or request.tenant:
        return request
    clone = copy.copy(request)
    clone.tenant = tenant
    return clone


def request_headers(
    credentials: Mapping[str, str], settings: ClientSettings, accept: str
) -> CIMultiDict[str]:
    """The HTTP headers of one call: the credential headers, then the protocol headers.

    Args:
        credentials: What the credential provider returned for this agent and method.
        settings: The client's settings (``user_agent``, ``extensions``).
        accept: The media type the call expects back.

    Returns:
        A new header multidict.
    """
    headers = CIMultiDict(credentials)
    headers[VERSION_HEADER] = PROTOCOL_VERSION
    headers["Content-Type"] = JSON_MEDIA_TYPE
    headers["Accept"] = accept
    headers["User-Agent"] = settings.user_agent
    if settings.extensions:
        headers[EXTENSIONS_HEADER] = join_extensions(settings.extensions)
    return headers


def text_request(
    text: str,
    *,
    context_id: str | None = None,
    task_id: str | None = None,
    return_immediately: bool = False,
    history_length: int | None = None,
    accepted_output_modes: Sequence[str] | None = None,
    metadata: dict[str, Any] | None = None,
    skill: str | None = None,
) -> SendMessageRequest:
    """Build a SendMessageRequest holding one user text part and a fresh uuid4 messageId.

    Args:
        text: The text to send.
        context_id: The conversation to continue, if any.
        task_id: The task to continue (e.g. one in INPUT_REQUIRED), if any.
        return_immediately: Ask SendMessage not to block (spec 3.2.2).
        history_length: How much task history to return (spec 3.2.4).
        accepted_output_modes: Media types the client accepts.
        metadata: Request metadata (``SendMessageRequest.metadata``); an agent is free to
            ignore it, and the a2a-wire server does not route by it.
        skill: The id of the skill to use (an ``AgentSkill.id`` of the card, spec 4.4.5), put
            into the message's metadata as ``skillId``.

    Returns:
        The request, ready for ``send_message`` or ``send_streaming_message``.
    """
    message = Message(
        message_id=new_uuid(),
        role=Role.USER,
        parts=[Part(text=text)],
        context_id=context_id or "",
        task_id=task_id or "",
        metadata={SKILL_ID_KEY: skill} if skill else None,
    )
    configuration = None
    if return_immediately or history_length is not None or accepted_output_modes:
        configuration = SendMessageConfiguration(
            accepted_output_modes=list(accepted_output_modes or []),
            history_length=history_length,
            return_immediately=return_immediately,
        )
    return SendMessageRequest(message=message, configuration=configuration, metadata=metadata)


def task_of(request: codec.ProtoMessage) -> str:
    """The id of the task ``request`` is about, or ``""`` (a SendMessage starting a task).

    Args:
        request: The params of any operation of spec 3.1.

    Returns:
        ``id`` of GetTask, CancelTask and SubscribeToTask, the message's ``taskId`` of
        SendMessage, ``taskId`` of the push-config requests; else ``""``.
    """
    if isinstance(request, (GetTaskRequest, CancelTaskRequest, SubscribeToTaskRequest)):
        return request.id
    if isinstance(request, SendMessageRequest):
        return request.message.task_id if request.message is not None else ""
    task_id = getattr(request, "task_id", "")
    return task_id if isinstance(task_id, str) else ""


@contextlib.contextmanager
def about_task(request: codec.ProtoMessage) -> Iterator[None]:
    """Name the task of ``request`` (:func:`task_of`) on the client errors raised inside."""
    try:
        yield
    except ClientError as exc:
        note_task(exc, task_of(request))
        raise
