"""The traffic recorder: every exchange of the inspector's client, as records for the page.

:class:`TrafficLog` is the client's ``ExchangeObserver``; the records are described in
docs/internals/cli.md. Credentials are never recorded: headers and body members that carry one
are kept with the value ``<hidden>``, and the ``curl`` line reads ``$A2A_WIRE_TOKEN``.
"""

from __future__ import annotations

import itertools
import shlex
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from a2a_wire import codec
from a2a_wire._protocol.sse import SSEDecoder, SSEProtocolError
from a2a_wire._protocol.wire import TOKEN_HEADER
from a2a_wire.cli.inspect._trace import TRACEPARENT, trace_id_of
from a2a_wire.client import ExchangeWatch

__all__ = ["HIDDEN", "TrafficLog", "curl_command", "describe_error"]

HIDDEN = "<hidden>"
Record = dict[str, Any]
Publish = Callable[[str, Record], None]

_SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie", "set-cookie"})
_SKIPPED_IN_CURL = frozenset({"content-length", "host", "user-agent"})
MAX_BODY_CHARS = 256 * 1024


def describe_error(exc: BaseException) -> dict[str, Any]:
    """An error as ``{"name", "message"[, "code"]}`` (messages of the client hold no secrets)."""
    described: dict[str, Any] = {"name": type(exc).__name__, "message": str(exc)}
    code = getattr(exc, "code", None)
    if isinstance(code, int):
        described["code"] = code
        described["message"] = str(getattr(exc, "message", exc))
    return described


def _hide_members(value: Any) -> tuple[Any, bool]:
    """``value`` with credentials in bodies replaced, and whether anything was."""
    if isinstance(value, list):
        pairs = [_hide_members(v) for v in value]
        return [v for v, _ in pairs], any(h for _, h in pairs)
    if not isinstance(value, dict):
        return value, False
    out: dict[str, Any] = {}
    hidden = False
    for key, item in value.items():
        secret = key == "credentials" or (key == "token" and "url" in value)
        if secret and isinstance(item, str) and item:
            out[key], hidden = HIDDEN, True
        else:
            out[key], inner = _hide_members(item)
            hidden = hidden or inner
    return out, hidden


def _body(data: bytes) -> tuple[Any, bool]:
    """A body for display: its JSON value, else its text (cut at :data:`MAX_BODY_CHARS`)."""
    if not data:
        return None, False
    try:
        return _hide_members(codec.loads(data))
    except codec.JSONSyntaxError:
        text = data.decode("utf-8", errors="replace")
        return (text[:MAX_BODY_CHARS] + " [cut]" if len(text) > MAX_BODY_CHARS else text), False


def curl_command(method: str, url: str, headers: list[list[str]], body: str | None) -> str:
    """A ``curl`` command line repeating a request; hidden values come from ``$A2A_WIRE_TOKEN``.

    Args:
        method: The HTTP method.
        url: The URL.
        headers: ``[name, value]`` pairs as recorded (secrets already hidden).
        body: The request body as text, if any.

    Returns:
        One line for a POSIX shell.
    """
    words = ["curl", "-sS", "-N"] if method == "POST" else ["curl", "-sS"]
    if method != "GET" and body is None:
        words += ["-X", method]
    words.append(shlex.quote(url))
    for name, value in headers:
        if name.lower() in _SKIPPED_IN_CURL:
            continue
        if value == HIDDEN or value.endswith(" " + HIDDEN):
            prefix = value[: -len(HIDDEN)]
            words.append(f'-H "{name}: {prefix}$A2A_WIRE_TOKEN"')
        else:
            words += ["-H", shlex.quote(f"{name}: {value}")]
    if body is not None:
        words += ["--data-raw", shlex.quote(body)]
    return " ".join(words)


class TrafficLog:
    """Records exchanges (docs/internals/cli.md) and hands each record to ``publish``.

    Args:
        publish: Called with ``("traffic", record)`` for every new record.
        secret_headers: Header names whose values are hidden, besides the usual ones.
        keep: How many records are kept for pages that connect later.
    """

    def __init__(
        self, publish: Publish, *, secret_headers: Iterable[str] = (), keep: int = 10_000
    ) -> None:
        self._publish = publish
        self._secret = set(_SECRET_HEADERS) | {TOKEN_HEADER.lower()}
        self._secret.update(name.lower() for name in secret_headers)
        self._records: deque[Record] = deque(maxlen=keep)
        self._seq = itertools.count(1)
        self._exchanges = itertools.count(1)
        self.dropped = 0

    def hide(self, name: str) -> None:
        """Hide the values of the header ``name`` from now on."""
        self._secret.add(name.lower())

    def records(self) -> list[Record]:
        """The records kept, oldest first."""
        return list(self._records)

    def headers(self, headers: Mapping[str, str]) -> list[list[str]]:
        """``headers`` as ``[name, value]`` pairs with secret values hidden."""
        pairs: list[list[str]] = []
        for name, value in headers.items():
            if name.lower() in self._secret:
                scheme, space, _ = value.partition(" ")
                value = f"{scheme} {HIDDEN}" if space and scheme.lower() == "bearer" else HIDDEN
            pairs.append([name, value])
        return pairs

    def add(self, kind: str, exchange: int, started: float, **fields: Any) -> Record:
        """Store and publish a record; ``started`` is the exchange's ``time.monotonic()``."""
        if len(self._records) == self._records.maxlen:
            self.dropped += 1
        record: Record = {"seq": next(self._seq), "kind": kind, "exchange": exchange}
        record["at"] = time.time() * 1000
        record["elapsed"] = round((time.monotonic() - started) * 1000, 1)
        record.update(fields)
        self._records.append(record)
        self._publish("traffic", record)
        return record

    def exchange(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str],
        body: bytes | None,
        *,
        stream: bool,
    ) -> ExchangeWatch:
        """Record a request and return the watch of its exchange."""
        number = next(self._exchanges)
        watch = _Watch(self, number, stream)
        shown, hidden = _body(body or b"")
        rpc = shown if isinstance(shown, dict) else {}
        text = None if body is None else body.decode("utf-8", errors="replace")
        if hidden:
            text = codec.dumps(shown).decode()
        pairs = self.headers(headers)
        parent = next((v for k, v in headers.items() if k.lower() == TRACEPARENT), None)
        watch.rpc = str(rpc.get("method") or ("agent card" if method == "GET" else ""))
        self.add(
            "request",
            number,
            watch.started,
            method=method,
            url=url,
            rpc=watch.rpc,
            rpcId=rpc.get("id"),
            stream=stream,
            traceId=trace_id_of(parent),
            headers=pairs,
            body=shown,
            size=len(body or b""),
            curl=curl_command(method, url, pairs, text),
        )
        return watch

    def push(self, headers: Mapping[str, str], body: bytes, status: int) -> Record:
        """Record a webhook delivery the inspector received and how it was answered.

        Its ``traceId`` is that of the delivery's ``traceparent``, if any.
        """
        shown, _ = _body(body)
        number = next(self._exchanges)
        parent = next((v for k, v in headers.items() if k.lower() == TRACEPARENT), None)
        return self.add(
            "push",
            number,
            time.monotonic(),
            traceId=trace_id_of(parent),  # the agent's trace of the task, when it sends one
            headers=self.headers(headers),
            body=shown,
            size=len(body),
            status=status,
        )


class _Watch:
    """One exchange being recorded."""

    def __init__(self, log: TrafficLog, number: int, stream: bool) -> None:
        self.log = log
        self.number = number
        self.started = time.monotonic()
        self.rpc = ""
        self.status = 0
        self.headers: list[list[str]] = []
        self.buffer = bytearray()
        self.size = 0
        self.events = 0
        self.decoder: SSEDecoder | None = None
        self.stream = stream

    def response(self, status: int, headers: Mapping[str, str]) -> None:
        self.status = status
        self.headers = self.log.headers(headers)
        media = headers.get("Content-Type", "").split(";")[0].strip().lower()
        if media == "text/event-stream":
            self.decoder = SSEDecoder()
            self.log.add(
                "response",
                self.number,
                self.started,
                rpc=self.rpc,
                status=status,
                headers=self.headers,
            )

    def body(self, chunk: bytes) -> None:
        self.size += len(chunk)
        if self.decoder is None:
            self.buffer += chunk
            return
        try:
            events = self.decoder.feed(chunk)
        except SSEProtocolError:
            self.decoder = None  # an oversized event: the client fails the stream as well
            return
        for event in events:
            self.events += 1
            data = event.data.encode()
            shown, _ = _body(data)
            self.log.add(
                "event", self.number, self.started, rpc=self.rpc, body=shown, size=len(data)
            )

    def end(self, error: BaseException | None) -> None:
        problem = describe_error(error) if error is not None else None
        if self.status == 0:
            self.log.add("error", self.number, self.started, rpc=self.rpc, error=problem)
        elif self.stream and self.decoder is not None:
            self.log.add(
                "end", self.number, self.started, rpc=self.rpc, events=self.events, error=problem
            )
        else:
            shown, _ = _body(bytes(self.buffer))
            self.log.add(
                "response",
                self.number,
                self.started,
                rpc=self.rpc,
                status=self.status,
                headers=self.headers,
                body=shown,
                size=self.size,
                error=problem,
            )
