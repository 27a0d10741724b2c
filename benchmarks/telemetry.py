"""Telemetry cost: the same server with OpenTelemetry not installed, installed but off, and on.

Each way is a2a_wire's server (in-memory store, the trivial agent of benchmarks/_agents.py) in
its own process pinned to CPU 0, while this process, the load generator of
benchmarks/server_load.py, is pinned to CPU 1:

``not installed``
    the reference. ``opentelemetry`` is made unimportable in the server process before anything
    is imported (``sys.modules["opentelemetry"] = None``, so every ``import opentelemetry...``
    raises ImportError), which is how a2a_wire finds out whether the ``telemetry`` extra is
    there: the code path of an installation without it, with everything else (interpreter,
    aiohttp, a2a_wire itself) the same, which a second virtual environment would not guarantee.
``off``
    the API installed, no provider configured (the API's proxy providers): nothing recorded.
``on``
    the SDK's TracerProvider with a BatchSpanProcessor and MeterProvider with a
    PeriodicExportingMetricReader (every 5 s), both exporting to exporters that drop what they
    get: the cost of making, batching and aggregating, without a collector's network cost.
``on, OTLP``
    as ``serve`` configures it from ``[telemetry]`` (benchmarks drive
    ``a2a_wire.cli._exporting.start_exporting``): batching OTLP/HTTP exporters posting every
    batch to a collector on 127.0.0.1, a process of this benchmark that reads each post and
    answers 200 (pinned with the load generator, to CPU 1): the cost "on" has in production.

Each way gets the closed-loop load of blocking SendMessage and of SendStreamingMessage (three
events) at concurrency 16 for ``--seconds`` after a warm-up; ``--rounds`` rounds (3), each in a
rotated order, pooled, so drift hits every way alike. The report gives requests per second and
the server's CPU time per request (from /proc; pooled, and each round's, which shows the
machine's noise), then the ratios ``off / not installed`` and
``on / off`` and the server CPU that ``on`` adds per request, in microseconds. The verdict line
compares ``off / not installed`` (server CPU per request, pooled) with the 2 % target and
prints ``met`` or ``missed``, beside the spread of the reference's own rounds: on a busy machine
that spread can exceed 2 %, and then neither word is worth much (rerun on a quiet one). The load
generator sends no ``traceparent``: each server span starts a trace. Any bad answer makes the
run exit with status 1.

Run: ``.venv/bin/python benchmarks/telemetry.py`` (about 3 minutes) or ``--quick``; the
``on, OTLP`` way needs the ``otlp`` extra (the test extra has it).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from _pg import cpu_seconds
from server_load import SEND, STREAM, LoadResult, new_session, run_load

HOST = "127.0.0.1"
WAYS = ("not installed", "off", "on", "on, OTLP")
TARGET = 1.02
"""``off`` may cost at most 2 % more server CPU per request than ``not installed``."""
KINDS = (SEND, STREAM)
CONCURRENCY = 16
WARMUP_SECONDS = 1.0
HERE = Path(__file__).resolve().parent


# --- the server (a child process) -------------------------------------------------------------


def _install_sdk() -> None:
    from opentelemetry import metrics, trace
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import (
        MetricExporter,
        MetricExportResult,
        PeriodicExportingMetricReader,
    )
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    class DropSpans(SpanExporter):
        def export(self, spans: object) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    class DropMetrics(MetricExporter):
        def export(
            self, metrics_data: object, timeout_millis: float = 0, **kw: object
        ) -> MetricExportResult:  # type: ignore[override]
            return MetricExportResult.SUCCESS

        def force_flush(self, timeout_millis: float = 0) -> bool:
            return True

        def shutdown(self, timeout_millis: float = 0, **kw: object) -> None:
            pass

    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(BatchSpanProcessor(DropSpans()))
    trace.set_tracer_provider(tracer_provider)
    reader = PeriodicExportingMetricReader(DropMetrics(), export_interval_millis=5000)
    metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))


def _export_to(collector: str) -> None:
    from a2a_wire.cli._exporting import start_exporting
    from a2a_wire.cli.config._telemetry import TelemetrySection

    section = TelemetrySection(enabled=True, endpoint=collector, metrics_interval_seconds=5.0)
    start_exporting(section, "bench")


def serve(way: str, port: int, collector: str) -> None:
    os.sched_setaffinity(0, {0})
    if way == "not installed":
        sys.modules["opentelemetry"] = None  # type: ignore[assignment]
    elif way == "on":
        _install_sdk()
    elif way == "on, OTLP":
        _export_to(collector)
    from _agents import TrivialAgent
    from _servers import bench_card
    from aiohttp import web

    from a2a_wire.server import create_app
    from a2a_wire.telemetry import AVAILABLE, DEFAULT

    assert AVAILABLE is (way != "not installed")
    assert (DEFAULT.tracer() is not None) is way.startswith("on")
    app = create_app(bench_card(), TrivialAgent())
    web.run_app(app, host=HOST, port=port, access_log=None, print=None)


def collect(port: int) -> None:
    """The loopback collector of ``on, OTLP``: reads each export and answers 200."""
    os.sched_setaffinity(0, {1} if (os.cpu_count() or 1) > 1 else {0})
    from aiohttp import web

    async def take(request: web.Request) -> web.Response:
        await request.read()
        return web.Response(body=b"", content_type="application/x-protobuf")

    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_post("/v1/traces", take)
    app.router.add_post("/v1/metrics", take)
    web.run_app(app, host=HOST, port=port, access_log=None, print=None)


# --- the load (this process) ------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


@contextmanager
def running(command: list[str], what: str) -> Iterator[tuple[str, int]]:
    """Start ``benchmarks/telemetry.py COMMAND --port P``; its base URL and pid once it listens."""
    port = _free_port()
    process = subprocess.Popen([sys.executable, __file__, *command, "--port", str(port)], cwd=HERE)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection((HOST, port), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"the {what} did not start") from None
                time.sleep(0.05)
        yield f"http://{HOST}:{port}", process.pid
    finally:
        process.terminate()
        process.wait(10)


@dataclass
class Cell:
    requests: int = 0
    elapsed: float = 0.0
    cpu: float = 0.0
    latencies: list[float] = field(default_factory=list)
    rounds: list[float] = field(default_factory=list)  # server CPU us/req of each round

    def add(self, other: Cell) -> None:
        """Pool one round's measurement into this cell."""
        self.requests += other.requests
        self.elapsed += other.elapsed
        self.cpu += other.cpu
        self.latencies += other.latencies
        self.rounds.append(other.cpu_us)

    @property
    def rate(self) -> float:
        return self.requests / self.elapsed if self.elapsed else 0.0

    @property
    def cpu_us(self) -> float:
        return self.cpu / self.requests * 1e6 if self.requests else 0.0

    @property
    def p50_ms(self) -> float:
        ordered = sorted(self.latencies)
        return ordered[len(ordered) // 2] * 1e3 if ordered else 0.0


async def measure(way: str, url: str, pid: int, kind: str, seconds: float) -> Cell:
    async with new_session(CONCURRENCY) as session:
        await run_load(session, url, kind, CONCURRENCY, WARMUP_SECONDS)
        before = cpu_seconds(pid) or 0.0
        result: LoadResult = await run_load(session, url, kind, CONCURRENCY, seconds)
        after = cpu_seconds(pid) or 0.0
    if result.errors:
        raise SystemExit(f"{way}: {result.errors} bad answers, e.g. {result.samples[:2]}")
    return Cell(result.requests, result.elapsed, after - before, result.latencies)


def report(cells: dict[tuple[str, str], Cell]) -> None:
    head = f"{'way':<14} {'call':<21} {'req/s':>8} {'p50 ms':>7} {'server CPU us/req':>18}"
    print(f"\n{head}   each round")
    for kind in KINDS:
        for way in WAYS:
            c = cells[way, kind]
            each = " ".join(f"{x:.0f}" for x in c.rounds)
            print(
                f"{way:<14} {kind:<21} {c.rate:>8.0f} {c.p50_ms:>7.2f} {c.cpu_us:>18.1f}   {each}"
            )
    print("\nratios (same run)             req/s   CPU/req   adds per request")
    for kind in KINDS:
        ref, off = cells["not installed", kind], cells["off", kind]
        print(
            f"{kind:<21} off/not installed {off.rate / ref.rate:>6.3f} {off.cpu_us / ref.cpu_us:>8.3f}"
        )
        for way in WAYS[2:]:
            on = cells[way, kind]
            label = f"{way}/off"
            print(
                f"{kind:<21} {label:<17} {on.rate / off.rate:>6.3f} {on.cpu_us / off.cpu_us:>8.3f}"
                f"   {on.cpu_us - off.cpu_us:+.1f} us server CPU"
            )
    print(
        f"\nverdict: 'off' within {TARGET - 1:.0%} of 'not installed' (server CPU per request;"
        " the median of the rounds' ratios, each round's two ways measured close together)"
    )
    for kind in KINDS:
        ref, off = cells["not installed", kind], cells["off", kind]
        paired = sorted(o / r for o, r in zip(off.rounds, ref.rounds, strict=True))
        ratio = statistics.median(paired)
        spread = max(ref.rounds) / min(ref.rounds) - 1 if len(ref.rounds) > 1 else float("nan")
        word = "met" if ratio <= TARGET else "missed"
        each = " ".join(f"{x:.3f}" for x in paired)
        print(
            f"{kind:<21} off/not installed {ratio:.3f}: {word}   (rounds: {each}; the"
            f" reference's own rounds differ by {spread:.1%})"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command")
    child = sub.add_parser("serve")
    child.add_argument("way", choices=WAYS)
    child.add_argument("--port", type=int, required=True)
    child.add_argument("--collector", default="")
    sink = sub.add_parser("collector")
    sink.add_argument("--port", type=int, required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=5.0, help="measured time per cell")
    parser.add_argument("--quick", action="store_true", help="1 round of 2 s cells")
    args = parser.parse_args()
    if args.command == "serve":
        serve(args.way, args.port, args.collector)
        return 0
    if args.command == "collector":
        collect(args.port)
        return 0
    if args.quick:
        args.rounds, args.seconds = 1, 2.0
    os.sched_setaffinity(0, {1} if os.cpu_count() and os.cpu_count() > 1 else {0})
    cells = {(way, kind): Cell() for way in WAYS for kind in KINDS}
    with running(["collector"], "collector") as (collector, _):
        for r in range(args.rounds):
            order = WAYS[r % len(WAYS) :] + WAYS[: r % len(WAYS)]
            for way in order:
                command = ["serve", way, "--collector", collector]
                with running(command, f"{way!r} server") as (url, pid):
                    for kind in KINDS:
                        got = asyncio.run(measure(way, f"{url}/", pid, kind, args.seconds))
                        cells[way, kind].add(got)
                print(f"round {r + 1}: {way} done", flush=True)
    report(cells)
    return 0


if __name__ == "__main__":
    sys.exit(main())
