"""The A2A client role over the JSON-RPC binding (spec 3.1.x, 3.6.1, 8.2, 8.3.2, 9.x).

:class:`A2AClient` has one coroutine per operation of spec 3.1, taking and returning the
generated classes (or a plain task id where the request has no other required field); build it
with :meth:`A2AClient.connect` or from an interface URL. No aiohttp or asyncio exception leaves
this API. See docs/client.md.
"""

from __future__ import annotations

import itertools
import logging
import weakref
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, TypeVar, overload

import aiohttp
import yarl
from multidict import CIMultiDict

from a2a_wire import codec
from a2a_wire._protocol import jsonrpc as _jsonrpc
from a2a_wire._protocol.wire import JSON_MEDIA_TYPE, SSE_MEDIA_TYPE
from a2a_wire.client._card_resolver import (
    CardCache,
    CardResolver,
    SignatureCheck,
    card_url,
    interface_url,
    select_interface,
)
from a2a_wire.client._credentials import CredentialProvider, CredentialRequest, NoCredentials
from a2a_wire.client._errors import AuthenticationError, note_task, safe_url
from a2a_wire.client._http import Peek, RawResponse, StreamConnection, Transport, json_body
from a2a_wire.client._observe import ExchangeObserver
from a2a_wire.client._peek import send_message_task
from a2a_wire.client._requests import P, about_task, request_headers, task_of, with_tenant
from a2a_wire.client._requests import text_request as _text_request
from a2a_wire.client._results import prepare
from a2a_wire.client._settings import ClientSettings
from a2a_wire.client._stream import (
    EventStream,
    Resubscription,
    ResumableStream,
    refuse_non_stream,
)
from a2a_wire.client._telemetry import ClientTelemetry
from a2a_wire.client._wait import poll_until_settled
from a2a_wire.errors import ClientError
from a2a_wire.methods import (
    CANCEL_TASK,
    CREATE_TASK_PUSH_NOTIFICATION_CONFIG,
    DELETE_TASK_PUSH_NOTIFICATION_CONFIG,
    GET_EXTENDED_AGENT_CARD,
    GET_TASK,
    GET_TASK_PUSH_NOTIFICATION_CONFIG,
    LIST_TASK_PUSH_NOTIFICATION_CONFIGS,
    LIST_TASKS,
    SEND_MESSAGE,
    SEND_STREAMING_MESSAGE,
    SUBSCRIBE_TO_TASK,
    Method,
)
from a2a_wire.telemetry import DEFAULT, Telemetry
from a2a_wire.types import (
    AgentCard,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    ListTasksRequest,
    ListTasksResponse,
    SendMessageRequest,
    SendMessageResponse,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskPushNotificationConfig,
)

__all__ = ["A2AClient", "ClientSettings", "EventStream", "ResumableStream"]

logger = logging.getLogger("a2a_wire.client")


R = TypeVar("R", bound=codec.ProtoMessage)


def _checked(method: Method[P, Any], request: object) -> P:
    """``request`` if it is ``method``'s params type; a clear TypeError at the call otherwise."""
    if not isinstance(request, method.params):
        wanted = method.params.__name__
        raise TypeError(f"{method.py_name}() takes a {wanted}, not {type(request).__name__}")
    return request


def _by_id(method: Method[P, Any], value: object, make: Callable[[str], P]) -> P:
    """The request ``make`` builds from a plain id, or ``value`` if it already is one."""
    if isinstance(value, str):
        return make(value)
    if not isinstance(value, method.params):
        wanted = f"a task id (str) or a {method.params.__name__}"
        raise TypeError(f"{method.py_name}() takes {wanted}, not {type(value).__name__}")
    return value


#: Cards fetched by :meth:`A2AClient.connect` when no cache is passed (shared, small, LRU).
SHARED_CARD_CACHE = CardCache()


class A2AClient:
    """An async A2A client bound to one JSON-RPC interface; use it as an async context manager.

    Args:
        url: The interface URL (an ``AgentInterface.url``).
        tenant: The interface's tenant, copied into each request whose ``tenant`` is empty.
        settings: Limits and address policy.
        credentials: Provider of per-request authentication headers.
        session: An aiohttp session to use instead of an owned, address-guarded one; the caller
            configures and closes it (only IP-literal hosts are then checked against ``allow``).
        card: The agent card, if known (passed to credential providers).
        observer: Told about every HTTP exchange of this client, as sent and received
            (:class:`~a2a_wire.client._observe.ExchangeObserver`; for debugging tools).
        telemetry: Where spans and metrics go (docs/observability.md); the global
            OpenTelemetry providers when omitted, which record nothing until an SDK is set.

    Raises:
        ValueError: ``url`` is not an absolute http(s) URL.
    """

    def __init__(
        self,
        url: str,
        *,
        tenant: str = "",
        settings: ClientSettings | None = None,
        credentials: CredentialProvider | None = None,
        session: aiohttp.ClientSession | None = None,
        card: AgentCard | None = None,
        observer: ExchangeObserver | None = None,
        telemetry: Telemetry | None = None,
    ) -> None:
        parsed = yarl.URL(url)
        if not parsed.is_absolute() or parsed.scheme not in ("http", "https"):
            raise ValueError(f"not an absolute http(s) URL: {safe_url(url)!r}")
        self.url = url
        self.tenant = tenant
        self.settings = settings if settings is not None else ClientSettings()
        self.credentials: CredentialProvider = credentials or NoCredentials()
        self.card = card
        self._transport = Transport(self.settings, session, observer)
        self._ids = itertools.count(1)
        self._telemetry = ClientTelemetry(telemetry if telemetry is not None else DEFAULT, url)

    @classmethod
    async def connect(
        cls,
        base_url: str,
        *,
        settings: ClientSettings | None = None,
        credentials: CredentialProvider | None = None,
        session: aiohttp.ClientSession | None = None,
        card_cache: CardCache | None = None,
        card_verifier: SignatureCheck | None = None,
        observer: ExchangeObserver | None = None,
        telemetry: Telemetry | None = None,
    ) -> A2AClient:
        """Discover the agent's card at ``base_url`` and connect to its JSONRPC 1.0 interface.

        Args:
            base_url: The agent's base URL; the card is read from its well-known path.
            settings: Limits and address policy (also used for the card fetch).
            credentials: Provider of per-request headers (not sent for the public card).
            session: An aiohttp session to use (see the class docstring).
            card_cache: Where to cache cards; :data:`SHARED_CARD_CACHE` when omitted.
            card_verifier: Checks the card's signatures (spec 8.4.3), e.g. a
                :class:`a2a_wire.card_signing.CardVerifier`; a card that fails is refused.
            observer: Told about every HTTP exchange, the card fetch included.
            telemetry: Where spans and metrics go (see the class docstring).

        Returns:
            A client for the first fitting interface, carrying its tenant and the card.

        Raises:
            NoCompatibleInterfaceError: The card offers no JSONRPC 1.0 interface.
            InvalidAgentCardError: The card does not decode, or its signature does not verify.
            ClientError: Fetching the card failed.
        """
        settings = settings if settings is not None else ClientSettings()
        transport = Transport(settings, session, observer)
        cache = card_cache if card_cache is not None else SHARED_CARD_CACHE
        try:
            resolver = CardResolver._over(transport, cache, card_verifier)
            card = await resolver.resolve(base_url)
            iface = select_interface(card)
            url = interface_url(card_url(base_url), iface)
            client = cls(
                url,
                tenant=iface.tenant,
                settings=settings,
                credentials=credentials,
                telemetry=telemetry,
            )
        except BaseException:
            await transport.close()
            raise
        client.card = card
        client._transport = transport
        return client

    async def close(self) -> None:
        """Close the owned session (an injected one is left open)."""
        await self._transport.close()

    async def __aenter__(self) -> A2AClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def __repr__(self) -> str:
        tenant = f", tenant={self.tenant!r}" if self.tenant else ""
        return f"A2AClient(url={safe_url(self.url)!r}{tenant})"

    # -- plumbing ---------------------------------------------------------------------------

    async def _headers(self, method: Method[Any, Any], accept: str) -> CIMultiDict[str]:
        if type(self.credentials) is NoCredentials:  # the default: no request to describe
            return request_headers({}, self.settings, accept)
        extra = await self.credentials.headers(CredentialRequest(self.url, method.name, self.card))
        return request_headers(extra, self.settings, accept)

    async def _call(self, method: Method[P, R], request: P, *, peek: Peek | None = None) -> R:
        rid = next(self._ids)
        body = _jsonrpc.request(rid, method, with_tenant(_checked(method, request), self.tenant))
        headers = await self._headers(method, JSON_MEDIA_TYPE)
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug("%s id=%d -> %s", method.name, rid, safe_url(self.url))
        watch = self._telemetry.call(method.name, request, headers, self.card)
        if watch is None:
            return await self._exchange(method, request, rid, body, headers, peek)
        try:
            result = await self._exchange(method, request, rid, body, headers, peek)
        except Exception as exc:
            watch.fail(exc)
            raise
        else:
            watch.add_value(result)
            return result
        finally:
            watch.end()

    async def _exchange(
        self,
        method: Method[P, R],
        request: P,
        rid: int,
        body: bytes,
        headers: CIMultiDict[str],
        peek: Peek | None,
    ) -> R:
        try:  # as about_task(request) does, without a context manager per call
            raw = await self._transport.request("POST", self.url, body, headers, peek=peek)
            try:
                answer = json_body(raw, self.url)
            except AuthenticationError as exc:  # a token the provider can replace: once more
                if not await self._rejected(method, exc):
                    raise
                headers = await self._headers(method, JSON_MEDIA_TYPE)
                raw = await self._transport.request("POST", self.url, body, headers, peek=peek)
                answer = json_body(raw, self.url)
        except ClientError as exc:
            note_task(exc, task_of(request))
            raise
        result = _jsonrpc.read_response(answer, rid, method)
        prepare(result)
        return result

    async def _rejected(self, method: Method[Any, Any], exc: AuthenticationError) -> bool:
        """Tell the credentials of a 401; whether they have a new credential to retry with."""
        rejected = getattr(self.credentials, "rejected", None)
        if exc.status != 401 or rejected is None:
            return False
        told = CredentialRequest(self.url, method.name, self.card)
        return bool(await rejected(told, exc.challenge))

    def _stream(
        self, method: Method[P, StreamResponse], request: P, expected_task: str = ""
    ) -> EventStream:
        rid = next(self._ids)
        body = _jsonrpc.request(rid, method, with_tenant(_checked(method, request), self.tenant))

        async def opener(extra: Mapping[str, str]) -> StreamConnection:
            try:
                return await open_once(extra)
            except AuthenticationError as exc:  # a token the provider can replace: once more
                if not await self._rejected(method, exc):
                    raise
                return await open_once(extra)

        async def open_once(extra: Mapping[str, str]) -> StreamConnection:
            headers = await self._headers(method, SSE_MEDIA_TYPE)
            headers.update(extra)
            if logger.isEnabledFor(logging.DEBUG):
                logger.debug("%s id=%d -> %s (stream)", method.name, rid, safe_url(self.url))
            watch = self._telemetry.call(method.name, request, headers, self.card)
            try:
                with about_task(request):
                    opened = await self._transport.open_stream(self.url, body, headers)
                if isinstance(opened, RawResponse):
                    refuse_non_stream(opened, self.url, rid, method)
            except Exception as exc:
                if watch is not None:
                    watch.fail(exc)
                    watch.end()
                raise
            owner = stream_ref()  # a weak reference: a stream left unclosed is freed at once
            if owner is not None:
                owner.record = watch  # the span lasts until the stream ends
            elif watch is not None:
                watch.end()
            return opened

        limit = self.settings.max_event_bytes
        stream = EventStream(
            opener,
            method=method,
            request_id=rid,
            max_event_bytes=limit,
            expected_task=expected_task,
        )
        stream_ref = weakref.ref(stream)
        return stream

    # -- operations (spec 3.1.1 - 3.1.11) ---------------------------------------------------

    async def send_message(self, request: SendMessageRequest) -> SendMessageResponse:
        """SendMessage (spec 3.1.1): a Task or a Message; blocks unless ``returnImmediately``.

        A ResponseTooLargeError names the task when the answer's beginning shows it.
        """
        return await self._call(SEND_MESSAGE, request, peek=send_message_task)

    def send_streaming_message(self, request: SendMessageRequest) -> EventStream:
        """SendStreamingMessage (spec 3.1.2): ``async with client.send_streaming_message(r) as s``.

        A follow-up (the message names its ``taskId``) may be answered with a stream that starts
        with an update of that task, not the Task (docs/client.md, "Stream").
        """
        message = request.message if isinstance(request, SendMessageRequest) else None
        named = message.task_id if message is not None else ""
        return self._stream(SEND_STREAMING_MESSAGE, request, named)

    @overload
    async def get_task(self, request: GetTaskRequest, /) -> Task: ...
    @overload
    async def get_task(self, task_id: str, /, *, history_length: int | None = None) -> Task: ...
    async def get_task(
        self, request: GetTaskRequest | str, /, *, history_length: int | None = None
    ) -> Task:
        """GetTask (spec 3.1.3) of a request, or of a task id (with ``history_length``).

        Raises:
            TypeError: Neither a task id nor a GetTaskRequest, or a request with
                ``history_length`` beside it (the request carries its own).
        """
        if history_length is not None and not isinstance(request, str):
            raise TypeError("get_task(): history_length goes with a task id, not a GetTaskRequest")
        params = _by_id(
            GET_TASK, request, lambda i: GetTaskRequest(id=i, history_length=history_length)
        )
        return await self._call(GET_TASK, params)

    async def list_tasks(self, request: ListTasksRequest) -> ListTasksResponse:
        """ListTasks (spec 3.1.4)."""
        return await self._call(LIST_TASKS, request)

    @overload
    async def cancel_task(self, request: CancelTaskRequest, /) -> Task: ...
    @overload
    async def cancel_task(self, task_id: str, /) -> Task: ...
    async def cancel_task(self, request: CancelTaskRequest | str, /) -> Task:
        """CancelTask (spec 3.1.5) of a request or of a task id.

        Raises:
            TypeError: Neither a task id nor a CancelTaskRequest.
        """
        params = _by_id(CANCEL_TASK, request, lambda i: CancelTaskRequest(id=i))
        return await self._call(CANCEL_TASK, params)

    @overload
    def subscribe_to_task(
        self, request: SubscribeToTaskRequest, /, *, last_event_id: str | None = None
    ) -> EventStream: ...
    @overload
    def subscribe_to_task(
        self, task_id: str, /, *, last_event_id: str | None = None
    ) -> EventStream: ...
    def subscribe_to_task(
        self, request: SubscribeToTaskRequest | str, /, *, last_event_id: str | None = None
    ) -> EventStream:
        """SubscribeToTask (spec 3.1.6) of a request or of a task id.

        ``last_event_id`` resumes after that event (docs/client.md).

        Raises:
            TypeError: Neither a task id nor a SubscribeToTaskRequest.
        """
        params = _by_id(SUBSCRIBE_TO_TASK, request, lambda i: SubscribeToTaskRequest(id=i))
        stream = self._stream(SUBSCRIBE_TO_TASK, params, params.id)
        return stream.resume_after(last_event_id, params.id)

    async def create_task_push_notification_config(
        self, config: TaskPushNotificationConfig
    ) -> TaskPushNotificationConfig:
        """CreateTaskPushNotificationConfig (spec 3.1.7); params are the flat config."""
        return await self._call(CREATE_TASK_PUSH_NOTIFICATION_CONFIG, config)

    async def get_task_push_notification_config(
        self, request: GetTaskPushNotificationConfigRequest
    ) -> TaskPushNotificationConfig:
        """GetTaskPushNotificationConfig (spec 3.1.8)."""
        return await self._call(GET_TASK_PUSH_NOTIFICATION_CONFIG, request)

    @overload
    async def list_task_push_notification_configs(
        self, request: ListTaskPushNotificationConfigsRequest, /
    ) -> ListTaskPushNotificationConfigsResponse: ...
    @overload
    async def list_task_push_notification_configs(
        self, task_id: str, /
    ) -> ListTaskPushNotificationConfigsResponse: ...
    async def list_task_push_notification_configs(
        self, request: ListTaskPushNotificationConfigsRequest | str, /
    ) -> ListTaskPushNotificationConfigsResponse:
        """ListTaskPushNotificationConfigs (spec 3.1.9) of a request or of a task id.

        Raises:
            TypeError: Neither a task id nor a ListTaskPushNotificationConfigsRequest.
        """
        method = LIST_TASK_PUSH_NOTIFICATION_CONFIGS
        params = _by_id(
            method, request, lambda i: ListTaskPushNotificationConfigsRequest(task_id=i)
        )
        return await self._call(method, params)

    async def delete_task_push_notification_config(
        self, request: DeleteTaskPushNotificationConfigRequest
    ) -> None:
        """DeleteTaskPushNotificationConfig (spec 3.1.10); the result is ``{}``."""
        await self._call(DELETE_TASK_PUSH_NOTIFICATION_CONFIG, request)

    async def get_extended_agent_card(
        self, request: GetExtendedAgentCardRequest | None = None
    ) -> AgentCard:
        """GetExtendedAgentCard (spec 3.1.11); the result also replaces :attr:`card`."""
        card = await self._call(GET_EXTENDED_AGENT_CARD, request or GetExtendedAgentCardRequest())
        self.card = card
        return card

    # -- conveniences -----------------------------------------------------------------------

    text_request = staticmethod(_text_request)
    """One user text part, fresh id (:func:`a2a_wire.client._requests.text_request`)."""

    async def send_text(
        self,
        text: str,
        *,
        context_id: str | None = None,
        task_id: str | None = None,
        return_immediately: bool = False,
        history_length: int | None = None,
        accepted_output_modes: Sequence[str] | None = None,
        metadata: dict[str, Any] | None = None,
        skill: str | None = None,
    ) -> SendMessageResponse:
        """Send one user text message (see :meth:`text_request` for the arguments).

        ``skill`` names the skill to use (an ``AgentSkill.id``), in the message's metadata.

        Returns:
            The Task or Message the agent answered with.
        """
        request = self.text_request(
            text,
            context_id=context_id,
            task_id=task_id,
            return_immediately=return_immediately,
            history_length=history_length,
            accepted_output_modes=accepted_output_modes,
            metadata=metadata,
            skill=skill,
        )
        return await self.send_message(request)

    async def wait(
        self,
        task_id: str,
        *,
        poll_interval: float = 0.5,
        max_interval: float = 5.0,
        backoff: float = 2.0,
        timeout: float | None = None,
        history_length: int | None = None,
    ) -> Task:
        """Poll GetTask until the task is terminal or interrupted.

        A state this version does not know counts as not finished, so polling goes on.

        Args:
            task_id: The task to wait for.
            poll_interval: First pause between polls, in seconds.
            max_interval: Longest pause between polls.
            backoff: Factor applied to the pause after each poll.
            timeout: Give up after this many seconds (``None``: never).
            history_length: Passed to each GetTask.

        Returns:
            The settled task.

        Raises:
            WaitTimeoutError: ``timeout`` passed first.
            ProtocolError: GetTask failed (e.g. TaskNotFoundError).
        """
        return await poll_until_settled(
            lambda: self.get_task(task_id, history_length=history_length),
            task_id,
            (poll_interval, max_interval, backoff),
            timeout,
        )

    def resumable(
        self,
        stream: EventStream,
        *,
        max_resubscribes: int | None = None,
        retry_delay: float | None = None,
        on_resume: Callable[[Resubscription], None] | None = None,
        end_of_turn: bool = True,
    ) -> ResumableStream:
        """Wrap a stream so that a drop re-subscribes with ``Last-Event-ID`` and carries on.

        So does a -32000 :class:`~a2a_wire.errors.UnavailableError` of the task (an error event,
        or a re-subscription answered 503), after its ``retry_after``. The pauses back off
        exponentially with jitter, within the ``resume_*`` budget of :attr:`settings`.

        Args:
            stream: A stream from :meth:`send_streaming_message` or :meth:`subscribe_to_task`.
            max_resubscribes: Most re-subscriptions in a row (drops and unavailable answers
                together); ``settings.resume_attempts`` when ``None``.
            retry_delay: Pause before the first re-subscription after a drop (doubled for each
                next one, up to ``settings.resume_max_delay``); ``settings.resume_delay`` when
                ``None``.
            on_resume: Called with a :class:`Resubscription` before each re-subscription.
            end_of_turn: End after the event that leaves the task INPUT_REQUIRED or
                AUTH_REQUIRED, even if the agent keeps the stream open (spec 11.7); ``False``
                reads on into the next turn.

        Returns:
            An async iterator (and context manager) over the events of all the streams; when
            the budget is spent it raises the last failure, noted with the task and its last
            event id.
        """
        settings = self.settings
        return ResumableStream(
            stream,
            subscribe=self.subscribe_to_task,
            get_task=self.get_task,
            max_resubscribes=settings.resume_attempts
            if max_resubscribes is None
            else max_resubscribes,
            retry_delay=settings.resume_delay if retry_delay is None else retry_delay,
            max_delay=settings.resume_max_delay,
            budget=settings.resume_budget,
            on_resume=on_resume,
            end_of_turn=end_of_turn,
        )
