"""What :func:`a2a_wire.codec.dumps` hands out holds no more memory than its length.

orjson (3.12 and later) returns its write buffer as the bytes object: at least 4 KiB for any
JSON, and a power of two above that. The task stores keep this output (snapshots, events, the
SQLite head cache), so ``dumps`` copies it to its own length; this measures the memory that
kept output holds, with ``tracemalloc``.
"""

from __future__ import annotations

import gc
import tracemalloc

from a2a_wire import codec
from a2a_wire.types import Part, TaskArtifactUpdateEvent

KEPT = 500


def _kept_bytes_each(make: object) -> float:
    assert callable(make)
    gc.collect()
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        kept = [make(i) for i in range(KEPT)]
        held = tracemalloc.get_traced_memory()[0] - start
    finally:
        tracemalloc.stop()
    assert len(kept) == KEPT
    return held / KEPT


def test_a_small_event_kept_holds_about_its_length() -> None:
    event = TaskArtifactUpdateEvent(task_id="t", context_id="c")

    def make(i: int) -> bytes:
        return codec.dumps({"artifactUpdate": event.to_dict(), "n": i, "text": "x" * 200})

    length = len(make(0))
    assert 200 < length < 300
    assert _kept_bytes_each(make) < length + 200  # the bytes object's header and the list slot


def test_a_larger_document_kept_holds_about_its_length() -> None:
    part = Part(text="y" * 10_000)

    def make(i: int) -> bytes:
        return codec.dumps({"part": part.to_dict(), "n": i})

    length = len(make(0))
    assert _kept_bytes_each(make) < length * 1.1
