"""Tests for the sans-IO SSE decoder and encoder (a2a_wire._protocol.sse)."""

from __future__ import annotations

import ast
import dataclasses
import pathlib
from collections.abc import Sequence
from typing import NamedTuple

import pytest
from hypothesis import given
from hypothesis import strategies as st

from a2a_wire._protocol import sse as _sse
from a2a_wire._protocol.sse import (
    SSEDecoder,
    SSEEvent,
    SSEProtocolError,
    encode_comment,
    encode_event,
)

E = SSEEvent


class Case(NamedTuple):
    stream: bytes
    events: list[SSEEvent]
    partial: bool = False
    comments: int = 0
    last_event_id: str = ""
    retry: int | None = None


CASES: dict[str, Case] = {
    "lf": Case(b"data: hello\n\n", [E("hello")]),
    "crlf": Case(b"data: hello\r\n\r\n", [E("hello")]),
    "cr": Case(b"data: hello\r\r", [E("hello")]),
    "mixed-line-ends": Case(b"data: a\r\ndata: b\rdata: c\n\r\n", [E("a\nb\nc")]),
    "cr-then-crlf-blank": Case(b"data: a\r\r\n", [E("a")]),
    "cr-events-then-partial": Case(b"data: a\r\rdata: b", [E("a")], partial=True),
    "lf-cr-is-two-line-ends": Case(b"data: a\n\r", [E("a")]),
    "two-events": Case(b"data: 1\n\ndata: 2\n\n", [E("1"), E("2")]),
    "multi-line-data": Case(b"data: a\ndata: b\ndata: c\n\n", [E("a\nb\nc")]),
    "blank-data-lines": Case(b"data\ndata\n\n", [E("\n")]),
    "comments": Case(b": ping\n\ndata: x\n: mid\n\n:\n\n", [E("x")], comments=3),
    "comment-only-stream": Case(b": keep-alive\n\n", [], comments=1),
    "event-type": Case(
        b"event: update\ndata: x\n\ndata: y\n\n", [E("x", "update"), E("y", "message")]
    ),
    "empty-event-type-is-message": Case(b"event:\ndata: x\n\n", [E("x", "message")]),
    "last-event-type-wins": Case(b"event: a\nevent: b\ndata: x\n\n", [E("x", "b")]),
    "id-is-sticky-and-resettable": Case(
        b"id: 1\ndata: a\n\ndata: b\n\nid\ndata: c\n\n",
        [E("a", id="1"), E("b", id="1"), E("c")],
    ),
    "id-with-nul-ignored": Case(
        b"id: 1\ndata: a\n\nid: 2\x003\ndata: b\n\n",
        [E("a", id="1"), E("b", id="1")],
        last_event_id="1",
    ),
    "id-only-block-sets-last-id": Case(
        b"id: 5\n\ndata: x\n\n", [E("x", id="5")], last_event_id="5"
    ),
    "id-keeps-spaces-after-first": Case(
        b"id:  7 \ndata: x\n\n", [E("x", id=" 7 ")], last_event_id=" 7 "
    ),
    "retry": Case(
        b"retry: 3000\ndata: a\n\nretry: 12x\ndata: b\n\nretry:\ndata: c\n\n"
        + "retry: \u0663\n".encode()
        + b"retry: 1234567890123456789\ndata: d\n\n",
        [E("a", retry=3000), E("b", retry=3000), E("c", retry=3000), E("d", retry=3000)],
        retry=3000,
    ),
    "retry-zero-and-no-data": Case(b"retry: 0\n\n", [], retry=0),
    "field-without-colon": Case(b"data\n\n", [E("")]),
    "one-space-removed": Case(b"data:no-space\ndata:  two\ndata: \n\n", [E("no-space\n two\n")]),
    "colon-in-value": Case(b'data: {"a":1}\n\n', [E('{"a":1}')]),
    "unknown-fields-ignored": Case(b"foo: bar\nData: x\ndata: y\nfoo\n\n", [E("y")]),
    "tab-is-not-stripped": Case(b"data:\tx\n\n", [E("\tx")]),
    "bom": Case(b"\xef\xbb\xbfdata: x\n\n", [E("x")]),
    "second-bom-is-content": Case(b"\xef\xbb\xbf\xef\xbb\xbfdata: x\n\ndata: y\n\n", [E("y")]),
    "bom-prefix-only": Case(b"\xef\xbbdata: x\n\ndata: y\n\n", [E("y")]),
    "bom-mid-stream-is-content": Case(b"data: x\n\n\xef\xbb\xbfdata: y\n\n", [E("x")]),
    "short-stream": Case(b"\n", []),
    "invalid-utf8-replaced": Case(
        b"data: \xff\xfe\ndata: \xe2\x82\n\n", [E("\ufffd\ufffd\n\ufffd")]
    ),
    "utf8-multibyte": Case(
        "data: h\u00e9llo \u2603 \U0001f600\n\n".encode(), [E("h\u00e9llo \u2603 \U0001f600")]
    ),
    "empty-data-not-dispatched": Case(
        b"event: x\nid: 3\n\ndata: y\n\n", [E("y", id="3")], last_event_id="3"
    ),
    "trailing-event-discarded": Case(b"data: a\n\ndata: b\n", [E("a")], partial=True),
    "trailing-line-discarded": Case(b"data: a\n\ndata: b", [E("a")], partial=True),
    "trailing-comment-fragment": Case(b"data: a\n\n: ke", [E("a")], partial=True),
    "trailing-id-not-applied": Case(b"data: a\n\nid: 9\n", [E("a")], partial=True),
    "trailing-complete-comment-is-not-partial": Case(b"data: a\n\n: ping\n", [E("a")], comments=1),
    "empty-stream": Case(b"", []),
    "trailing-cr-is-a-line-end": Case(b"data: a\n\r", [E("a")]),
}


def _run(chunks: Sequence[bytes], **kwargs: int) -> tuple[list[SSEEvent], SSEDecoder]:
    decoder = SSEDecoder(**kwargs)
    events: list[SSEEvent] = []
    for chunk in chunks:
        events += decoder.feed(chunk)
    assert decoder.close() == []
    return events, decoder


def _check(case: Case, chunks: Sequence[bytes]) -> None:
    assert b"".join(chunks) == case.stream
    events, decoder = _run(chunks)
    assert events == case.events
    assert decoder.discarded_partial is case.partial
    assert decoder.comments_seen == case.comments
    assert decoder.last_event_id == case.last_event_id
    assert decoder.retry == case.retry


def _split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = [0, *sorted(cuts), len(data)]
    return [data[a:b] for a, b in zip(points, points[1:], strict=False)]


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_whole(case: Case) -> None:
    _check(case, [case.stream])


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_byte_by_byte(case: Case) -> None:
    _check(case, [case.stream[i : i + 1] for i in range(len(case.stream))])


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
@given(data=st.data())
def test_arbitrary_splits(case: Case, data: st.DataObject) -> None:
    cuts = data.draw(st.lists(st.integers(0, len(case.stream))), label="cuts")
    # Empty chunks (repeated cut points) must be harmless too.
    _check(case, _split(case.stream, cuts))


@pytest.mark.parametrize(
    "chunks",
    [
        [b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n"],
        [b"data: a\r", b"", b"\n", b"data: b\r\n", b"\r", b"", b"\n"],
        [b"data: a\r", b"\n", b"data: b\r", b"\n", b"\r", b"\n"],
    ],
)
def test_cr_at_chunk_boundary_then_lf_is_one_line_end(chunks: list[bytes]) -> None:
    events, decoder = _run(chunks)
    # Had the LF counted as a second line end, "a" would have been dispatched on its own.
    assert events == [E("a\nb")]
    assert not decoder.discarded_partial


def test_cr_inside_a_chunk_does_not_swallow_the_next_chunks_lf() -> None:
    events, _ = _run([b"data: a\rdata: b", b"\n\n"])
    assert events == [E("a\nb")]


def test_cr_at_chunk_boundary_then_cr_is_two_line_ends() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\r") == []
    assert decoder.feed(b"\r") == [E("a")]


def test_lf_skip_applies_only_once() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\r") == []
    assert decoder.feed(b"\n") == []
    assert decoder.feed(b"\n") == [E("a")]


@pytest.mark.parametrize("end", [b"\n\n", b"\r\n\r\n", b"\r\r"])
def test_events_are_returned_by_the_feed_that_completes_them(end: bytes) -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a" + end + b"data: b") == [E("a")]
    assert decoder.feed(end + b"da") == [E("b")]


def test_bom_split_across_chunks_is_stripped() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"\xef") == []
    assert decoder.feed(b"\xbb") == []
    assert decoder.feed(b"\xbfdata: x\n\n") == [E("x")]


def test_partial_bom_at_close_is_partial() -> None:
    events, decoder = _run([b"\xef\xbb"])
    assert events == []
    assert decoder.discarded_partial


def test_clean_end_is_not_partial() -> None:
    decoder = SSEDecoder()
    decoder.feed(b"data: a\n\n")
    decoder.close()
    assert decoder.discarded_partial is False


def test_close_is_idempotent_and_feed_after_close_fails() -> None:
    decoder = SSEDecoder()
    decoder.feed(b"data: a\n")
    assert decoder.close() == []
    assert decoder.discarded_partial
    assert decoder.close() == []
    assert decoder.discarded_partial
    with pytest.raises(RuntimeError, match="after close"):
        decoder.feed(b"\n")


def test_event_is_frozen_and_slotted() -> None:
    event = E("x")
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'data'"):
        event.data = "y"  # type: ignore[misc]
    assert not hasattr(event, "__dict__")
    assert event == SSEEvent(data="x", event="message", id=None, retry=None)


# --- size limit -------------------------------------------------------------------------------


def test_limit_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_event_bytes"):
        SSEDecoder(max_event_bytes=0)


@pytest.mark.parametrize("line", [b"data: " + b"x" * 10, b": " + b"x" * 14, b"x" * 16])
def test_line_of_exactly_the_limit_is_accepted(line: bytes) -> None:
    assert len(line) == 16
    events, _ = _run([line + b"\n\n"], max_event_bytes=16)
    assert events == ([E("x" * 10)] if line.startswith(b"data") else [])


@pytest.mark.parametrize("line", [b"data: " + b"x" * 11, b": " + b"x" * 15, b"x" * 17])
@given(data=st.data())
def test_line_over_the_limit_fails_however_split(line: bytes, data: st.DataObject) -> None:
    stream = b"data: ok\n\n" + line + b"\n\n"
    cuts = data.draw(st.lists(st.integers(0, len(stream))), label="cuts")
    decoder = SSEDecoder(max_event_bytes=16)
    with pytest.raises(SSEProtocolError, match=r"line exceeds max_event_bytes=16"):
        for chunk in _split(stream, cuts):
            decoder.feed(chunk)


def test_unterminated_line_growing_forever_fails() -> None:
    decoder = SSEDecoder(max_event_bytes=1024)
    decoder.feed(b"data: ")
    with pytest.raises(SSEProtocolError, match="max_event_bytes=1024"):
        for _ in range(200):
            decoder.feed(b"x" * 64)


def test_tail_after_line_end_over_the_limit_fails() -> None:
    decoder = SSEDecoder(max_event_bytes=16)
    with pytest.raises(SSEProtocolError, match="line exceeds"):
        decoder.feed(b"\n" + b"x" * 17)


def test_event_over_the_limit_fails() -> None:
    decoder = SSEDecoder(max_event_bytes=32)
    assert decoder.feed(b"data: 1234\n" * 3) == []  # 30 bytes of data lines: still fine
    with pytest.raises(SSEProtocolError, match=r"event exceeds max_event_bytes=32"):
        decoder.feed(b"data: 1234\n")


def test_event_size_resets_after_dispatch() -> None:
    decoder = SSEDecoder(max_event_bytes=32)
    for _ in range(10):
        assert decoder.feed(b"data: 1234\n" * 3 + b"\n") == [E("1234\n1234\n1234")]


def test_large_block_of_short_lines_is_fine() -> None:
    events, _ = _run([b"data: abc\n\n" * 5], max_event_bytes=10)
    assert events == [E("abc")] * 5


# --- encoder ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"data": b'{"a":1}'}, b'data: {"a":1}\n\n'),
        ({"data": b""}, b"data: \n\n"),
        ({"data": b" lead"}, b"data:  lead\n\n"),
        ({"data": b"a\nb"}, b"data: a\ndata: b\n\n"),
        ({"data": b"a\r\nb\rc\n"}, b"data: a\ndata: b\ndata: c\ndata: \n\n"),
        ({"data": b"x", "event": "update"}, b"event: update\ndata: x\n\n"),
        ({"data": b"x", "id": "7"}, b"id: 7\ndata: x\n\n"),
        ({"data": b"x", "event": "e", "id": ""}, b"event: e\nid: \ndata: x\n\n"),
    ],
)
def test_encode_event_bytes(kwargs: dict[str, object], expected: bytes) -> None:
    assert encode_event(**kwargs) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"event": "a\nb"},
        {"event": "a\r"},
        {"id": "1\n"},
        {"id": "\r\n"},
        {"id": "1\x002"},
    ],
)
def test_encode_event_rejects_line_breaks_in_fields(kwargs: dict[str, str]) -> None:
    with pytest.raises(ValueError, match="must not contain"):
        encode_event(b"x", **kwargs)


def test_encode_comment() -> None:
    assert encode_comment() == b":\n\n"
    assert encode_comment("ping") == b": ping\n\n"
    with pytest.raises(ValueError, match="must not contain"):
        encode_comment("a\nb")
    decoder = SSEDecoder()
    assert decoder.feed(encode_comment() + encode_comment("x") + encode_event(b"y")) == [E("y")]
    assert decoder.comments_seen == 2


_LINE_BREAKS = st.sampled_from(["\n", "\r", "\r\n"])
_TEXT_WITH_BREAKS = st.lists(st.one_of(st.text(), _LINE_BREAKS)).map("".join)
_FIELD = st.text().filter(lambda s: not ({"\n", "\r", "\x00"} & set(s)))


def _normalize(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


@given(text=_TEXT_WITH_BREAKS)
def test_round_trip_data(text: str) -> None:
    # The decoder splits data at every kind of line end and rejoins with LF, so CR and CRLF
    # inside data come back as LF; nothing else changes.
    events, decoder = _run([encode_event(text.encode())])
    assert events == [E(_normalize(text))]
    assert not decoder.discarded_partial


@given(
    items=st.lists(
        st.tuples(_TEXT_WITH_BREAKS, st.none() | _FIELD, st.none() | _FIELD), max_size=5
    ),
    comment=_FIELD,
    data=st.data(),
)
def test_round_trip_stream(
    items: list[tuple[str, str | None, str | None]], comment: str, data: st.DataObject
) -> None:
    stream = b"".join(
        encode_comment(comment) + encode_event(text.encode(), event=event, id=id_)
        for text, event, id_ in items
    )
    expected: list[SSEEvent] = []
    last_id: str | None = None
    for text, event, id_ in items:
        if id_ is not None:
            last_id = id_ or None
        expected.append(E(_normalize(text), event or "message", last_id))
    cuts = data.draw(st.lists(st.integers(0, len(stream))), label="cuts")
    events, decoder = _run(_split(stream, cuts))
    assert events == expected
    assert decoder.comments_seen == len(items)
    assert not decoder.discarded_partial


# --- module hygiene -------------------------------------------------------------------------


def test_imports_only_the_stdlib_basics_and_the_error_root() -> None:
    tree = ast.parse(pathlib.Path(_sse.__file__).read_text(encoding="utf-8"))
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.module is not None
            imported.add(node.module)
    assert imported == {"__future__", "dataclasses", "a2a_wire.errors"}


def test_all_is_sorted_and_complete() -> None:
    assert _sse.__all__ == sorted(_sse.__all__)
    public = {name for name in vars(_sse) if not name.startswith("_")} - {
        "annotations",
        "dataclass",
        "A2AError",
    }
    assert set(_sse.__all__) == public
