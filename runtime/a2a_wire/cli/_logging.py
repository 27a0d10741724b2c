"""Structured logs of ``a2a-wire serve``: one line per request, and the formatters.

The fields of a request line are listed in docs/server.md ("Logs"). They come from what the
server already parsed and noted (the request and response keys of :mod:`a2a_wire.server`), so
no body is parsed twice, and no header, body or credential is logged. :class:`NotingExecutor`
reports the id of a task a request created through a context variable.
"""

from __future__ import annotations

import asyncio
import contextvars
import datetime
import json
import logging
import re
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError, LineTooLong
from aiohttp.typedefs import Handler

from a2a_wire import codec
from a2a_wire._protocol.wire import JSON_MEDIA_TYPE
from a2a_wire.server import (
    CALLS_KEY,
    CLIENT_ID_KEY,
    ERROR_CODES_KEY,
    PROBE_PATHS,
    TRACE_KEY,
    AgentExecutor,
    EventQueue,
    RequestContext,
)
from a2a_wire.telemetry import TraceContextFilter

__all__ = [
    "JSONFormatter",
    "MalformedRequests",
    "NotingExecutor",
    "RequestLog",
    "TextFormatter",
    "configure_logging",
]

access_log = logging.getLogger("a2a_wire.access")

_TASK_ID_PARAM = frozenset({"GetTask", "CancelTask", "SubscribeToTask"})
_BARE = re.compile(r"[^\s\"=\\]+\Z")


@dataclass(slots=True)
class _Note:
    method: str = ""
    task_id: str = ""


_NOTE: contextvars.ContextVar[_Note | None] = contextvars.ContextVar(
    "a2a_wire_request_note", default=None
)


class NotingExecutor(AgentExecutor):
    """Wraps the server's executor to tell the request log which task a request works on.

    Args:
        inner: The executor that does the work.
    """

    def __init__(self, inner: AgentExecutor) -> None:
        self.inner = inner

    async def execute(self, context: RequestContext, events: EventQueue) -> None:
        """Note the task id, then run the inner executor."""
        note = _NOTE.get()
        if note is not None and not note.task_id:
            note.task_id = context.task_id
        await self.inner.execute(context, events)

    async def cancel(self, context: RequestContext, events: EventQueue) -> None:
        """Run the inner executor's cancel."""
        await self.inner.cancel(context, events)


def _from_params(method: str, params: object) -> str:
    if not isinstance(params, dict):
        return ""
    if isinstance(params.get("taskId"), str):
        return str(params["taskId"])
    if method in _TASK_ID_PARAM and isinstance(params.get("id"), str):
        return str(params["id"])
    message = params.get("message")
    if isinstance(message, dict) and isinstance(message.get("taskId"), str):
        return str(message["taskId"])
    return ""


def _describe(request: web.Request, note: _Note) -> None:
    """Fill in the JSON-RPC method and task id from the calls the server parsed."""
    parsed = request.get(CALLS_KEY)
    if parsed is None:  # not a JSON-RPC body the server could parse
        note.method = note.method or "?"
        return
    calls, is_batch = parsed
    if is_batch:
        note.method = f"batch[{len(calls)}]"
        return
    call = calls[0]
    note.method = call.method_name[:64] or "?"
    note.task_id = note.task_id or _from_params(note.method, call.params)


class RequestLog:
    """The request-logging middleware, which also refuses requests once shutdown began.

    Attributes:
        active: Requests being answered now (streams included).
        draining: Set at shutdown: new requests get HTTP 503 and ``Connection: close``.
        worker: The number of this worker of ``serve --workers``, named on each line;
            ``None`` for a server of its own.
    """

    def __init__(self) -> None:
        self.active = 0
        self.draining = False
        self.worker: int | None = None

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Answer the request through ``handler`` and log one line about it."""
        if self.draining and request.path not in PROBE_PATHS:  # /readyz says so itself
            return _unavailable()
        note = _Note()
        token = _NOTE.set(note)
        start = time.perf_counter()
        self.active += 1
        try:
            response = await handler(request)
        except BaseException as exc:
            status = 499 if isinstance(exc, asyncio.CancelledError) else 500
            _log_line(request, None, note, status, start, self.worker)
            raise
        finally:
            self.active -= 1
            _NOTE.reset(token)
        if request.method == "POST":
            _describe(request, note)
        _log_line(request, response, note, response.status, start, self.worker)
        return response


def _unavailable() -> web.Response:
    body = {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32603, "message": "The server is shutting down"},
    }
    return web.Response(
        body=codec.dumps(body),
        status=503,
        content_type=JSON_MEDIA_TYPE,
        headers={"Connection": "close", "Retry-After": "5"},
    )


def _log_line(
    request: web.Request,
    response: web.StreamResponse | None,
    note: _Note,
    status: int,
    start: float,
    worker: int | None,
) -> None:
    fields: dict[str, Any] = {
        "method": note.method or request.method,
        "http": request.method,
        "path": request.path[:200],
        "status": status,
        **_outcome(request, response),
        "duration_ms": round((time.perf_counter() - start) * 1000, 2),
    }
    if note.task_id:
        fields["task_id"] = note.task_id[:200]
    if worker is not None:
        fields["worker"] = worker
    trace = request.get(TRACE_KEY)
    if trace is not None:
        fields["trace_id"], fields["span_id"] = trace
    access_log.info("request", extra={"fields": fields})


def _outcome(request: web.Request, response: web.StreamResponse | None) -> dict[str, Any]:
    """The ``error``, ``client`` and ``remote`` fields of a request's log line."""
    fields: dict[str, Any] = {}
    codes = response.get(ERROR_CODES_KEY, ()) if response is not None else ()
    if codes:
        fields["error"] = codes[0] if len(codes) == 1 else ",".join(str(c) for c in codes)
    client = request.get(CLIENT_ID_KEY, "")
    if client:
        fields["client"] = client[:200]
    if request.remote:
        fields["remote"] = request.remote
    return fields


def _timestamp(record: logging.LogRecord) -> str:
    moment = datetime.datetime.fromtimestamp(record.created, datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


_TRACE_FIELDS = ("trace_id", "span_id")


def _fields(record: logging.LogRecord) -> Mapping[str, Any]:
    """The record's ``fields``, then the ids :class:`TraceContextFilter` set, unless given."""
    fields = getattr(record, "fields", None)
    fields = fields if isinstance(fields, Mapping) else {}
    trace = {
        name: getattr(record, name)
        for name in _TRACE_FIELDS
        if name not in fields and hasattr(record, name)
    }
    return {**fields, **trace} if trace else fields


def _quote(value: object) -> str:
    text = str(value)
    return text if _BARE.match(text) else json.dumps(text, ensure_ascii=False)


class TextFormatter(logging.Formatter):
    """``time level message key=value ...``; a traceback follows on the next lines."""

    def format(self, record: logging.LogRecord) -> str:
        """Render one record."""
        pairs = " ".join(f"{key}={_quote(value)}" for key, value in _fields(record).items())
        line = f"{_timestamp(record)} {record.levelname.lower()} {record.getMessage()}"
        if record.name != access_log.name:
            line += f" logger={record.name}"
        line = f"{line} {pairs}" if pairs else line
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


class JSONFormatter(logging.Formatter):
    """One JSON object per line: ``ts``, ``level``, ``logger``, ``msg``, the fields, ``exc``."""

    def format(self, record: logging.LogRecord) -> str:
        """Render one record."""
        obj: dict[str, Any] = {
            "ts": _timestamp(record),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
            **_fields(record),
        }
        if record.exc_info:
            obj["exc"] = self.formatException(record.exc_info)
        return json.dumps(obj, ensure_ascii=False, default=str)


class MalformedRequests(logging.Filter):
    """Filter of ``aiohttp.server``: a request aiohttp could not parse is one line, no traceback.

    aiohttp logs ``Error handling request`` with the parser's exception (at ``error``, or at
    ``debug`` for garbage opening a connection); the record is rewritten to ``malformed request``
    at ``info`` at most, with the status aiohttp answered, the problem's first line (for a line
    too long, not the start of it aiohttp quotes: it may be a bearer token) and the remote
    address. Other records pass unchanged.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        """Rewrite a parse failure's record; keep it only when its new level is logged."""
        exc = record.exc_info[1] if record.exc_info else None
        if not isinstance(exc, HttpProcessingError):
            return True
        remote = record.args[0] if isinstance(record.args, tuple) and record.args else ""
        problem = str(exc.message).strip().splitlines()
        if isinstance(exc, LineTooLong):  # aiohttp quotes the line's start: maybe a credential
            problem = [f"a request or header line longer than {exc.args[1]} bytes"]
        record.fields = {
            "status": exc.code,
            "problem": problem[0][:200] if problem else "",
            "remote": str(remote),
        }
        record.msg, record.args = "malformed request", ()
        record.exc_info, record.exc_text = None, None
        if record.levelno > logging.INFO:
            record.levelno, record.levelname = logging.INFO, "INFO"
        return logging.getLogger().isEnabledFor(record.levelno)


class _Stderr(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to ``sys.stderr`` as it is when a record comes, never to a stream closed since.

    ``logging.StreamHandler()`` keeps the stream of the moment it was made: when that stream is
    a stand-in that was closed since (a test's captured stderr), a record logged later, say
    by a thread still finishing, is a logging error.
    """

    def __init__(self) -> None:
        logging.Handler.__init__(self)

    @property
    def stream(self) -> Any:
        """The current ``sys.stderr``."""
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        """Ignored: the stream is always the current ``sys.stderr``."""


def configure_logging(level: str, fmt: str, *, sql: bool = False) -> None:
    """Send every log record at ``level`` or above to stderr in format ``fmt``.

    Records go to ``sys.stderr`` as it is when each is logged (not as it was when this ran).

    The server's start and stop lines are logged whatever the level. aiosqlite writes two debug
    lines per SQL statement; they are left out, even at ``debug``, unless ``sql`` asks for them.
    aiohttp's reports of requests it could not parse go through :class:`MalformedRequests`.

    Args:
        level: ``debug``, ``info``, ``warning`` or ``error``.
        fmt: ``text`` or ``json``.
        sql: Also log aiosqlite's debug lines (``serve --log-sql``).
    """
    handler = _Stderr()
    handler.addFilter(TraceContextFilter())
    handler.setFormatter(JSONFormatter() if fmt == "json" else TextFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    # The start and stop lines (listening, stopping, stopped) are logged at any level.
    serve_log = logging.getLogger("a2a_wire.serve")
    serve_log.setLevel(min(logging.INFO, root.level))
    sqlite_log = logging.getLogger("aiosqlite")
    sqlite_log.setLevel(logging.NOTSET if sql else max(logging.INFO, root.level))
    logging.getLogger("aiohttp.access").disabled = True
    aiohttp_server = logging.getLogger("aiohttp.server")
    if not any(isinstance(f, MalformedRequests) for f in aiohttp_server.filters):
        aiohttp_server.addFilter(MalformedRequests())
