"""The tick workload of benchmarks/scale_latency.py, shared by our agent and the SDK's.

A run's message text is ``"N INTERVAL_MS"``. The agent starts the task (WORKING), waits until
the gate file ``GATE_DIR/<task id>`` exists (the benchmark makes it once its subscriber on the
other process holds the task's stream), then adds chunk ``i`` of one artifact, ``"i T"``
(:func:`tick_text`, ``T`` the emission time), at ``start + i * INTERVAL_MS``, and completes the
task. Nothing here imports a2a_wire or the SDK, so each side's process loads only its own.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

GATE_SECONDS = 60.0
"""Longest time a run waits for its gate file before it fails the task."""

TICKS_ARTIFACT = "ticks"


def tick_message(count: int, interval_ms: float) -> str:
    """The message text asking for ``count`` ticks ``interval_ms`` milliseconds apart."""
    return f"{count} {interval_ms:g}"


def parse_ticks(text: str) -> tuple[int, float]:
    """The count and the period in seconds of :func:`tick_message`'s text."""
    count, interval_ms = text.split()
    return int(count), float(interval_ms) / 1e3


def tick_text(i: int) -> str:
    """Chunk ``i``: its number and the emission time, read from ``time.monotonic``.

    ``CLOCK_MONOTONIC`` is one clock for every process of a Linux machine, so the subscriber,
    in another process, subtracts it from its own reading of the same clock.
    """
    return f"{i} {time.monotonic():.6f}"


def parse_tick(text: str) -> tuple[int, float]:
    """The number and the emission time of a chunk made by :func:`tick_text`."""
    number, emitted = text.split()
    return int(number), float(emitted)


async def wait_gate(gate: Path) -> bool:
    """Wait (at most :data:`GATE_SECONDS`) until the file ``gate`` exists."""
    deadline = time.monotonic() + GATE_SECONDS
    while not gate.exists():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.005)
    return True


def tick_schedule(count: int, interval: float) -> list[float]:
    """The ``time.monotonic`` instants of ``count`` ticks ``interval`` seconds apart, from now."""
    start = time.monotonic()
    return [start + i * interval for i in range(count)]


async def sleep_until(instant: float) -> None:
    """Sleep until ``time.monotonic()`` reaches ``instant`` (at once if it has)."""
    delay = instant - time.monotonic()
    if delay > 0:
        await asyncio.sleep(delay)
