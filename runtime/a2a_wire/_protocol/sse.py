"""Sans-IO Server-Sent Events: an incremental decoder and a small encoder (spec 9.1, 9.4.2).

The decoder follows the HTML standard's event stream rules; a line or event over
``max_event_bytes`` raises :class:`SSEProtocolError`, after which the decoder must be dropped.
No I/O, no asyncio or aiohttp. How it decodes: docs/internals/protocol.md.
"""

from __future__ import annotations

from dataclasses import dataclass

from a2a_wire.errors import A2AError

__all__ = [
    "DEFAULT_MAX_EVENT_BYTES",
    "SSEDecoder",
    "SSEEvent",
    "SSEProtocolError",
    "encode_comment",
    "encode_event",
]

DEFAULT_MAX_EVENT_BYTES = 16 * 1024 * 1024
_BOM = b"\xef\xbb\xbf"
# A reconnection delay longer than this many digits is not a usable number of milliseconds
# (and int() refuses very long digit strings), so such a retry field is ignored.
_MAX_RETRY_DIGITS = 18


class SSEProtocolError(A2AError):
    """The event stream broke a limit this decoder enforces (tree: :mod:`a2a_wire.errors`)."""


@dataclass(frozen=True, slots=True)
class SSEEvent:
    """One dispatched event.

    Attributes:
        data: The data lines of the event joined with LF.
        event: The event type; ``"message"`` when the stream named none.
        id: The last event ID in effect at dispatch, or ``None`` when there is none.
        retry: The reconnection delay in milliseconds in effect at dispatch, or ``None``.
    """

    data: str
    event: str = "message"
    id: str | None = None
    retry: int | None = None


class SSEDecoder:
    """Incremental ``text/event-stream`` decoder.

    Attributes:
        last_event_id: The last event ID string (set when an event is dispatched; ``""`` = none).
        retry: The reconnection delay in milliseconds last announced by the stream, or ``None``.
        comments_seen: How many comment lines have been read (keep-alives among them).
        discarded_partial: Set by :meth:`close` when the stream ended inside an event or line.
    """

    __slots__ = (
        "_at_start",
        "_buf",
        "_closed",
        "_data",
        "_data_size",
        "_event_type",
        "_id_buffer",
        "_limit",
        "_pending",
        "_skip_lf",
        "comments_seen",
        "discarded_partial",
        "last_event_id",
        "retry",
    )

    def __init__(self, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES) -> None:
        """Create a decoder at the start of a stream.

        Args:
            max_event_bytes: Cap on the length of one line and on the summed length of the
                ``data`` lines of one event, counted in raw bytes without line ends.

        Raises:
            ValueError: If ``max_event_bytes`` is not positive.
        """
        if max_event_bytes <= 0:
            raise ValueError("max_event_bytes must be positive")
        self._limit = max_event_bytes
        self._buf = bytearray()
        self._at_start = True
        self._skip_lf = False
        self._closed = False
        self._data: list[str] = []
        self._data_size = 0
        self._event_type = ""
        self._id_buffer = ""
        self._pending = False
        self.last_event_id = ""
        self.retry: int | None = None
        self.comments_seen = 0
        self.discarded_partial = False

    def feed(self, data: bytes) -> list[SSEEvent]:
        """Consume the next chunk of the stream.

        Args:
            data: Any number of bytes, split anywhere.

        Returns:
            The events completed by this chunk, possibly none.

        Raises:
            SSEProtocolError: If a line or an event grows beyond ``max_event_bytes``.
            RuntimeError: If the decoder was already closed.
        """
        if self._closed:
            raise RuntimeError("SSEDecoder.feed() called after close()")
        if self._skip_lf and data:
            self._skip_lf = False
            if data[0] == 0x0A:
                data = data[1:]
        if self._at_start:
            data = self._strip_bom(data)
        if not data:
            return []
        # Servers usually write whole events, so a chunk mostly ends on a line end: skip the scan.
        end = len(data) - 1
        if data[end] != 0x0A and data[end] != 0x0D:
            end = max(data.rfind(b"\n"), data.rfind(b"\r"))
        buf = self._buf
        if end < 0:
            buf += data
            if len(buf) > self._limit:
                raise self._too_long("line")
            return []
        self._skip_lf = data[-1] == 0x0D  # only a CR that ends the chunk can pair with an LF
        if buf:
            end += len(buf)
            buf += data
            block: bytes | bytearray = buf[: end + 1]
            del buf[: end + 1]
        else:
            block = data if end + 1 == len(data) else data[: end + 1]
            buf += data[end + 1 :]
        if len(buf) > self._limit:
            raise self._too_long("line")
        lines = block.splitlines()
        if len(block) > self._limit and max(map(len, lines)) > self._limit:
            raise self._too_long("line")
        return self._process(lines)

    def close(self) -> list[SSEEvent]:
        """Mark the end of the stream.

        Every line end is acted on as soon as it is fed, so nothing is left to dispatch: a pending
        event or unterminated line is discarded and :attr:`discarded_partial` records that.

        Returns:
            An empty list (kept for symmetry with :meth:`feed`).
        """
        if not self._closed:
            self._closed = True
            self.discarded_partial = bool(self._buf) or self._pending
            self._buf.clear()
            self._data = []
        return []

    def _strip_bom(self, data: bytes) -> bytes:
        """Drop one leading byte order mark, waiting while the first bytes could still be one."""
        buf = self._buf
        buf += data
        if len(buf) < len(_BOM) and _BOM.startswith(buf):
            return b""
        self._at_start = False
        head = bytes(buf[len(_BOM) :] if buf.startswith(_BOM) else buf)
        buf.clear()
        return head

    def _too_long(self, what: str) -> SSEProtocolError:
        return SSEProtocolError(
            f"SSE {what} exceeds max_event_bytes={self._limit}; refusing to buffer more"
        )

    def _process(self, lines: list[bytes] | list[bytearray]) -> list[SSEEvent]:
        """Apply the field rules to complete lines (terminators already removed)."""
        # Hot loop: per-event state lives in locals and is written back once at the end.
        events: list[SSEEvent] = []
        data = self._data
        size = self._data_size
        pending = self._pending
        for raw in lines:
            if not raw:
                last_id = self.last_event_id = self._id_buffer
                if data:
                    event_type = self._event_type or "message"
                    events.append(
                        SSEEvent("\n".join(data), event_type, last_id or None, self.retry)
                    )
                    data = []
                    size = 0
                self._event_type = ""
                pending = False
            elif raw[0] == 0x3A:  # ':' starts a comment
                self.comments_seen += 1
            else:
                pending = True
                name, _, value = raw.decode("utf-8", "replace").partition(":")
                if value[:1] == " ":
                    value = value[1:]
                if name == "data":
                    size += len(raw)
                    if size > self._limit:
                        raise self._too_long("event")
                    data.append(value)
                else:
                    self._field(name, value)
        self._data = data
        self._data_size = size
        self._pending = pending
        return events

    def _field(self, name: str, value: str) -> None:
        """Apply a field other than ``data``; unknown names are ignored."""
        if name == "event":
            self._event_type = value
        elif name == "id":
            if "\x00" not in value:
                self._id_buffer = value
        elif name == "retry":
            if value.isascii() and value.isdigit() and len(value) <= _MAX_RETRY_DIGITS:
                self.retry = int(value)


def encode_event(data: bytes, *, event: str | None = None, id: str | None = None) -> bytes:
    """Frame one event.

    Every line end in ``data`` (LF, CRLF or CR) starts a new ``data:`` line, so a decoder returns
    ``data`` with its line ends turned into LF.

    Args:
        data: The payload, normally one line of JSON.
        event: The event type; omitted when ``None``.
        id: The event ID; omitted when ``None``.

    Returns:
        The framed event, ending with the blank line that dispatches it.

    Raises:
        ValueError: If ``event`` or ``id`` contains CR or LF, or ``id`` contains NUL.
    """
    # find() is the quicker scan for one byte (``in`` takes a slower generic path).
    if data.find(b"\n") >= 0 or data.find(b"\r") >= 0:
        lines = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
        body = b"data: " + b"\ndata: ".join(lines) + b"\n\n"
    else:
        body = b"data: " + data + b"\n\n"
    if event is None and id is None:
        return body
    head = b""
    if event is not None:
        _check_field("event", event)
        head += b"event: " + event.encode() + b"\n"
    if id is not None:
        _check_field("id", id)
        if "\x00" in id:
            raise ValueError("SSE id must not contain NUL")
        head += b"id: " + id.encode() + b"\n"
    return head + body


def encode_comment(text: str = "") -> bytes:
    r"""Frame a comment, as used for keep-alives; decoders ignore it.

    Args:
        text: The comment text, one line.

    Returns:
        ``b":\\n\\n"`` for empty text, else ``b": text\\n\\n"``.

    Raises:
        ValueError: If ``text`` contains CR or LF.
    """
    if not text:
        return b":\n\n"
    _check_field("comment", text)
    return b": " + text.encode() + b"\n\n"


def _check_field(what: str, value: str) -> None:
    if "\n" in value or "\r" in value:
        raise ValueError(f"SSE {what} must not contain CR or LF: {value!r}")
