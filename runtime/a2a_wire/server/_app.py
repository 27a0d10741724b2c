"""The A2A JSON-RPC server on aiohttp: :func:`create_app` and the HTTP glue (spec 9).

It serves the card, the probes and ``POST <rpc_path>``: reads and checks the body and the
envelope, hands each call to :mod:`._methods`, writes a JSON answer or an event stream. No code
here picks an HTTP status for an error: errors that answer a whole request are raised, and the
middleware answers with the error's own ``http_status`` and ``http_headers``. The HTTP rules are
in docs/server.md, the path of a request in docs/internals/server.md.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

from aiohttp import hdrs, web
from aiohttp.typedefs import Handler

from a2a_wire import codec
from a2a_wire._protocol import jsonrpc as _jsonrpc
from a2a_wire._protocol.jsonrpc import Call
from a2a_wire._protocol.wire import (
    JSON_MEDIA_TYPE,
    JSON_MEDIA_TYPES,
    VERSION_HEADER,
    WELL_KNOWN_PATH,
    check_version,
)
from a2a_wire.errors import (
    InternalError,
    InvalidRequestError,
    MethodNotFoundError,
    ProtocolError,
    UnavailableError,
)
from a2a_wire.server._admission import (
    Admission,
    echo_extensions,
    extended_card,
    public_card,
)
from a2a_wire.server._auth import SecurityConfig
from a2a_wire.server._body import client_left, read_body, settle
from a2a_wire.server._call import Services
from a2a_wire.server._call_info import CallInfo
from a2a_wire.server._card import CardPublisher
from a2a_wire.server._cors import Cors
from a2a_wire.server._errors import (
    ServerFailureError,
    UnsupportedMediaTypeError,
    from_http,
    with_retry_after,
)
from a2a_wire.server._executor import AgentExecutor
from a2a_wire.server._health import HEALTH_KEY, Health
from a2a_wire.server._methods import Capabilities, call_stream, call_unary
from a2a_wire.server._report import CLIENT_ID_KEY, ERROR_CODES_KEY, error_codes
from a2a_wire.server._retention import RETENTION_KEY, Retention
from a2a_wire.server._runtime import Runtime
from a2a_wire.server._settings import ServerSettings
from a2a_wire.server._skills import SkillRouter, SkillSet
from a2a_wire.server._store_timing import StoreTiming
from a2a_wire.server._streaming import error_answer, stream_events
from a2a_wire.server._telemetry import (
    TRACE_KEY,
    ServerCall,
    ServerTelemetry,
    TracedAgent,
    observing,
)
from a2a_wire.server.push._delivery import PUSH_DELIVERER_KEY, PushDeliverer
from a2a_wire.server.push._observed import PushTelemetry
from a2a_wire.server.store import EventLogStore, InMemoryTaskStore
from a2a_wire.telemetry import DEFAULT, Telemetry
from a2a_wire.types import AgentCard

__all__ = ["CALLS_KEY", "RUNTIME_KEY", "STORE_KEY", "TRACE_KEY", "create_app"]

log = logging.getLogger("a2a_wire.server")

RUNTIME_KEY = web.AppKey("a2a_wire.runtime", Runtime)
"""The application's task runtime (agent runs, open streams)."""
STORE_KEY: web.AppKey[EventLogStore] = web.AppKey("a2a_wire.store")
"""The application's task store."""
_SETTINGS = web.AppKey("a2a_wire.settings", ServerSettings)
_OBSERVED = web.AppKey("a2a_wire.telemetry", ServerTelemetry)
CALLS_KEY: web.RequestKey[tuple[tuple[Call, ...], bool]] = web.RequestKey("a2a_wire.calls")
"""On a JSON-RPC request whose body parsed: its calls, and whether the body was a batch.

For middleware that reports on requests (the CLI's request log) without parsing the body again.
"""


def _json(value: Any, status: int = 200) -> web.Response:
    response = web.Response(body=codec.dumps(value), status=status, content_type=JSON_MEDIA_TYPE)
    response[ERROR_CODES_KEY] = error_codes(value)
    return response


def _with_status(answer: Any, exc: ProtocolError) -> web.Response:
    """``answer`` (holding ``exc``) with the error's own HTTP status and headers."""
    response = _json(answer, exc.http_status)
    for name, value in exc.http_headers():
        response.headers.add(name, value)
    return response


def _error(exc: ProtocolError) -> web.Response:
    """The response holding only ``exc``: its HTTP status and headers, a JSON-RPC error body."""
    return _with_status(_jsonrpc.error(None, exc), exc)


class _RPCEndpoint:
    """The POST handler of one application."""

    def __init__(
        self,
        services: Services,
        caps: Capabilities,
        admission: Admission,
        telemetry: ServerTelemetry,
    ) -> None:
        self.services = services
        self.caps = caps
        self.settings = services.settings
        self.admission = admission
        self.telemetry = telemetry

    async def handle(self, request: web.Request) -> web.StreamResponse:
        """Answer one JSON-RPC POST; errors that refuse the whole request are raised."""
        info = await self.admission.admit(request)  # authentication and rate limits first
        request[CLIENT_ID_KEY] = info.client_id
        if request.content_type not in JSON_MEDIA_TYPES or hdrs.CONTENT_TYPE not in request.headers:
            raise UnsupportedMediaTypeError(request.headers.get(hdrs.CONTENT_TYPE, "")[:100])
        settings = self.settings
        body = await read_body(request, settings.max_body_bytes, settings.body_timeout_seconds)
        calls, is_batch = _jsonrpc.parse_body(body)
        request[CALLS_KEY] = (tuple(calls), is_batch)
        if is_batch and len(calls) > self.settings.max_batch_size:
            limit = self.settings.max_batch_size
            raise InvalidRequestError(f"Batch of {len(calls)} calls exceeds {limit}")
        version = request.headers.get(VERSION_HEADER) or request.query.get(VERSION_HEADER)
        refusal = check_version(version)
        if not is_batch:
            call = calls[0]
            method = call.method
            if method is not None and method.streaming and _streamable(call):
                return await self._stream(request, call, info, refusal)
            answer, exc = await self._answer(request, call, info, refusal)
            if answer is None:
                return web.Response(status=204)
            return _with_status(answer, exc) if isinstance(exc, UnavailableError) else _json(answer)
        answers = await asyncio.gather(*(self._answer(request, c, info, refusal) for c in calls))
        batch = [answer for answer, _ in answers if answer is not None]
        return _json(batch) if batch else web.Response(status=204)

    async def _stream(
        self, request: web.Request, call: Call, info: CallInfo, refusal: ProtocolError | None
    ) -> web.StreamResponse:
        slot = self.admission.stream_slot(request, info)
        watch = self.telemetry.call(request, call)
        try:
            with observing(watch):  # the span lasts as long as the stream
                return await self._open_stream(request, call, info, refusal, watch)
        finally:
            if slot:
                self.admission.streams.release(slot)

    async def _open_stream(
        self,
        request: web.Request,
        call: Call,
        info: CallInfo,
        refusal: ProtocolError | None,
        watch: ServerCall | None,
    ) -> web.StreamResponse:
        assert call.method is not None
        try:
            if refusal is not None:
                raise refusal
            subscription = await call_stream(
                self.services, self.caps, call.method, call.params, info
            )
        except ProtocolError as exc:
            told = self._told(exc)
        except Exception:  # outermost boundary of a call: log, answer -32603 without detail
            log.exception("%s failed", call.method_name)
            told = InternalError()
        else:
            return await stream_events(request, call.id, subscription, self.settings, watch)
        if watch is not None:
            watch.failed(told)
        return error_answer(call.id, told)

    async def _answer(
        self, request: web.Request, call: Call, info: CallInfo, refusal: ProtocolError | None
    ) -> tuple[dict[str, Any] | None, ProtocolError | None]:
        """The response object for one non-streamed call and the error it holds, if any.

        The object is ``None`` for a notification.
        """
        watch = self.telemetry.call(request, call)
        with observing(watch):  # the span is current while the method runs (and starts runs)
            exc = _refusal(call, refusal)
            if exc is None:
                assert call.method is not None
                try:
                    value = await call_unary(
                        self.services, self.caps, call.method, call.params, info
                    )
                    encoded = value.to_dict()  # the one place a unary result becomes JSON
                except ProtocolError as error:
                    exc = self._told(error)
                except Exception:  # outermost boundary of a call: log, answer -32603, no detail
                    log.exception("%s failed", call.method_name)
                    exc = InternalError()
                else:
                    if watch is not None:
                        watch.answered(value)
                    return None if call.notification else _jsonrpc.result(call.id, encoded), None
            if watch is not None:
                watch.failed(exc)
            return None if call.notification else _jsonrpc.error(call.id, exc), exc

    def _told(self, exc: ProtocolError) -> ProtocolError:
        return with_retry_after(exc, self.settings.store_retry_after_seconds)


def _streamable(call: Call) -> bool:
    """A single streaming call is answered with a stream, even when it is refused."""
    return not call.notification and call.invalid is None


def _refusal(call: Call, version: ProtocolError | None) -> ProtocolError | None:
    """What answers ``call`` before any method runs: envelope, version, method, batch rules."""
    if call.invalid is not None and not isinstance(call.invalid, MethodNotFoundError):
        return call.invalid
    if version is not None:
        return version
    if call.invalid is not None:
        return call.invalid
    assert call.method is not None
    if call.method.streaming:  # only reached inside a batch or as a notification
        return InvalidRequestError(
            f"{call.method.name} streams its answer; it cannot be sent in a batch or as a "
            "notification"
        )
    return None


@web.middleware
async def _json_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Answer every error with a JSON-RPC error body, with the error's own status (module doc)."""
    settings = request.app[_SETTINGS]
    try:
        return await handler(request)
    except ProtocolError as exc:
        refusal: ProtocolError = exc
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        refusal = from_http(exc, request, settings.max_body_bytes)
    except ConnectionResetError:  # the client hung up (while sending its body): nobody to answer
        return client_left(request)
    except Exception:  # the outermost server boundary: log, answer -32603 without detail
        log.exception("unhandled error serving %s %s", request.method, request.path)
        refusal = ServerFailureError()
    return await settle(request, _error(refusal), refusal, settings.body_timeout_seconds)


def create_app(
    card: AgentCard,
    executor: AgentExecutor | None = None,
    *,
    store: EventLogStore | None = None,
    settings: ServerSettings | None = None,
    security: SecurityConfig | None = None,
    telemetry: Telemetry | None = None,
) -> web.Application:
    """Build the aiohttp application of an A2A JSON-RPC server.

    Args:
        card: The public agent card. Its ``capabilities`` decide which methods are allowed
            (spec 3.3.4); its ``supportedInterfaces`` are served with this server's JSON-RPC
            endpoint first (one entry per tenant its JSON-RPC entries name).
        executor: The agent; leave it out when ``security.skills`` names the executors.
        store: Task storage, opened (recovery) at startup and closed at cleanup; when omitted,
            an :class:`~a2a_wire.server.store.InMemoryTaskStore` with the settings' limits.
        settings: Limits and addresses (:class:`~a2a_wire.server.ServerSettings`), default if omitted.
        security: Registered clients, skills, extended card and card signing
            (:class:`~a2a_wire.server._auth.SecurityConfig`); none of them when omitted, which means
            no authentication (see :mod:`a2a_wire.server._auth`).
        telemetry: Where spans and metrics go (docs/observability.md); global providers if omitted.

    Returns:
        The application, ready for ``web.run_app`` or a test client.

    Raises:
        ValueError: both or neither of ``executor`` and skills given, a card signer without
            ``public_url``, or invalid skills or clients.
    """
    settings = settings or ServerSettings()
    security = security or SecurityConfig()
    store = store if store is not None else _memory_store(settings)
    registry = security.registry()
    telemetry = telemetry or DEFAULT
    observed = ServerTelemetry(telemetry, card.name)
    agent, skills = _agent(card, executor, security, observed)
    card = public_card(card, registry, skills)
    caps = Capabilities.of(card)
    deliverer = _deliverer(store, settings, observed) if caps.push_notifications else None
    on_push = deliverer.wake if deliverer else None
    on_state = observed.transition if telemetry.enabled else None
    observed.watch_leases(store)
    runtime = Runtime(agent, store, settings, skills, on_push, on_state)
    publisher = CardPublisher(card, settings, security.card_signer)
    extended = extended_card(publisher, skills, registry) if security.extended_card else None
    services = Services(runtime, store, settings, caps.push_notifications, extended)
    admission = Admission(registry, settings, skills, caps.extensions)
    endpoint = _RPCEndpoint(services, caps, admission, observed)
    app = web.Application(client_max_size=settings.max_body_bytes, middlewares=[_json_errors])
    app[RUNTIME_KEY] = runtime
    app[STORE_KEY] = store
    app[_SETTINGS] = settings
    app[_OBSERVED] = observed
    app[HEALTH_KEY] = health = Health(store, settings)
    health.install(app)
    _add_routes(app, settings, security, publisher, endpoint)
    _add_lifecycles(app, runtime, deliverer)
    return app


def _add_lifecycles(
    app: web.Application, runtime: Runtime, deliverer: PushDeliverer | None
) -> None:
    """Open the store, then start push delivery and retention; stop the runs at shutdown."""
    app.cleanup_ctx.append(_storage)
    if deliverer is not None:  # after the store: started once it is open, closed before it
        app[PUSH_DELIVERER_KEY] = deliverer
        app.cleanup_ctx.append(deliverer.lifecycle)
    app[RETENTION_KEY] = retention = Retention(runtime.store, runtime.settings, runtime.busy)
    app.cleanup_ctx.append(retention.lifecycle)
    app.on_shutdown.append(_stop_runtime)


def _add_routes(
    app: web.Application,
    settings: ServerSettings,
    security: SecurityConfig,
    publisher: CardPublisher,
    endpoint: _RPCEndpoint,
) -> None:
    """The card, the JSON-RPC endpoint (closed at cleanup) and, when origins are configured, CORS."""
    app.router.add_get(WELL_KNOWN_PATH, publisher.handle)
    app.on_response_prepare.append(echo_extensions)
    app.router.add_post(settings.rpc_path, endpoint.handle)
    app.on_cleanup.append(endpoint.admission.close)
    if settings.cors_origins:
        Cors(settings.cors_origins, security.api_key_header).install(app, settings.rpc_path)


def _memory_store(settings: ServerSettings) -> InMemoryTaskStore:
    """The store of an app given none: in memory, with the settings' history limit and cap."""
    limit, cap = settings.max_history_per_task, settings.memory_max_tasks
    return InMemoryTaskStore(history_limit=limit, max_tasks=cap)


def _agent(
    card: AgentCard,
    executor: AgentExecutor | None,
    security: SecurityConfig,
    observed: ServerTelemetry,
) -> tuple[AgentExecutor, SkillSet | None]:
    """The executor the runtime calls: ``executor``, or a router over the skills; traced."""
    if not security.skills:
        if executor is None:
            raise ValueError("create_app needs an executor or SecurityConfig.skills")
        return _traced(executor, observed), None
    if executor is not None:
        raise ValueError("pass the agent either as executor or through SecurityConfig.skills")
    skills = SkillSet(
        security.skills,
        default_input_modes=card.default_input_modes,
        default_output_modes=card.default_output_modes,
    )
    return _traced(SkillRouter(skills), observed), skills


def _deliverer(
    store: EventLogStore, settings: ServerSettings, observed: ServerTelemetry
) -> PushDeliverer:
    """The push delivery worker; its attempts are spans in their tasks' traces when traced."""
    telemetry = observed.telemetry
    pushes = PushTelemetry(telemetry, observed.last_run) if telemetry.enabled else None
    return PushDeliverer(store, settings.push, observed=pushes)


def _traced(agent: AgentExecutor, observed: ServerTelemetry) -> AgentExecutor:
    """``agent``, its runs made spans unless telemetry is turned off (or not installed)."""
    return TracedAgent(agent, observed) if observed.telemetry.enabled else agent


async def _storage(app: web.Application) -> AsyncIterator[None]:
    store = app[STORE_KEY]
    failed = await store.open()
    timing = StoreTiming.install(store, app[_OBSERVED].telemetry.instruments())
    if failed:
        one = len(failed) == 1
        log.warning(
            "%d %s interrupted by a restart %s marked failed",
            len(failed),
            "task" if one else "tasks",
            "was" if one else "were",
        )
    try:
        yield
    finally:
        try:
            await app[RUNTIME_KEY].close()
        finally:  # the store closes also when stopping the runtime failed or was cancelled
            if timing is not None:
                timing.remove()
            await store.close()


async def _stop_runtime(app: web.Application) -> None:
    await app[RUNTIME_KEY].close()
