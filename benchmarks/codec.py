"""Benchmark a2a_wire.codec against protobuf json_format, used the way the official a2a-sdk uses it.

Run ``.venv/bin/python benchmarks/codec.py`` (or add ``--quick`` for a short smoke run).

The reference side compiles ``fixtures/a2a.proto`` with grpc_tools into a temporary directory and
mirrors the a2a-sdk JSON-RPC path (a2a/server/routes/jsonrpc_dispatcher.py): the body is parsed
with ``json.loads`` (Starlette ``Request.json``) and then ``ParseDict(..., ignore_unknown_fields=True)``;
results go out through ``MessageToDict(..., preserving_proto_field_name=False)`` and Starlette's
``JSONResponse.render`` (``json.dumps`` compact, ``ensure_ascii=False``, UTF-8).
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from a2a_wire import codec
from a2a_wire.types import (
    Artifact,
    Message,
    Part,
    Role,
    SendMessageRequest,
    Task,
    TaskState,
    TaskStatus,
    Timestamp,
)

ROOT = Path(__file__).resolve().parent.parent
PROTO = ROOT / "fixtures" / "a2a.proto"
PAGE = os.sysconf("SC_PAGE_SIZE")
Codec = tuple[Callable[[type, bytes], Any], Callable[[Any], bytes]]


# --- workloads ----------------------------------------------------------------------------------


def _part(i: int) -> Part:
    """One part of each content kind in turn: text, data, file by URL, raw bytes."""
    kind = i % 4
    if kind == 0:
        return Part(
            text=f"Step {i}: the agent looked at the report and found {i * 7} open items. " * 6
        )
    if kind == 1:
        rows = [
            {"id": f"row-{i}-{j}", "score": j * 0.5, "ok": j % 2 == 0, "tags": ["a", "b"]}
            for j in range(6)
        ]
        return Part(data={"table": rows, "total": i, "note": None}, media_type="application/json")
    if kind == 2:
        return Part(
            url=f"https://files.example.com/{i}/chart.png",
            media_type="image/png",
            filename="chart.png",
        )
    return Part(
        raw=bytes(range(i % 50, i % 50 + 200)),
        media_type="application/octet-stream",
        filename=f"blob-{i}.bin",
    )


def _message(i: int) -> Message:
    parts = [_part(i * 3 + k) for k in range(2 + i % 2)]
    role = Role.USER if i % 2 == 0 else Role.AGENT
    return Message(
        message_id=f"msg-{i:05d}", context_id="ctx-42", task_id="task-1", role=role, parts=parts
    )


def _artifact(i: int) -> Artifact:
    return Artifact(
        artifact_id=f"art-{i:04d}",
        name=f"result-{i}.md",
        description="Intermediate findings produced by the research step.",
        parts=[_part(i), _part(i + 1)],
        metadata={
            "source": "planner",
            "attempt": i,
            "labels": ["draft", "internal"],
            "reviewed": False,
        },
    )


def make_task(messages: int, artifacts: int) -> Task:
    stamp = Timestamp(seconds=1_767_225_600 + messages, nanos=250_000_000)
    status = TaskStatus(state=TaskState.COMPLETED, timestamp=stamp, message=_message(messages))
    return Task(
        id="task-1",
        context_id="ctx-42",
        status=status,
        history=[_message(i) for i in range(messages)],
        artifacts=[_artifact(i) for i in range(artifacts)],
        metadata={"tenant": "acme", "priority": 3},
    )


def workloads() -> list[tuple[str, Any]]:
    small = SendMessageRequest(
        message=Message(
            message_id="msg-1", role=Role.USER, parts=[Part(text="What is the weather in Paris?")]
        )
    )
    return [("small", small), ("typical", make_task(10, 3)), ("large", make_task(200, 20))]


# --- the two implementations ------------------------------------------------------------------


def compile_reference(out: Path) -> ModuleType:
    """Compile fixtures/a2a.proto to a2a_pb2 in ``out`` and import it."""
    if not PROTO.is_file():
        sys.exit(f"error: {PROTO.relative_to(ROOT)} is missing; run `make proto` first")
    import grpc_tools

    api_root = next(
        (p for p in sys.path if Path(p, "google/api/annotations.proto").is_file()), None
    )
    if api_root is None:
        sys.exit("error: google/api/*.proto not found; install googleapis-common-protos")
    well_known = Path(grpc_tools.__file__).parent / "_proto"
    cmd = [sys.executable, "-m", "grpc_tools.protoc", f"--python_out={out}"]
    cmd += [f"-I{PROTO.parent}", f"-I{api_root}", f"-I{well_known}", str(PROTO)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"error: protoc failed:\n{done.stderr}")
    sys.path.insert(0, str(out))
    import a2a_pb2  # type: ignore[import-not-found]

    return a2a_pb2  # type: ignore[no-any-return]


def reference_codec(pb: ModuleType) -> Codec:
    from google.protobuf import json_format

    def ref_decode(cls: type, data: bytes) -> Any:
        return json_format.ParseDict(json.loads(data), cls(), ignore_unknown_fields=True)

    def ref_encode(msg: Any) -> bytes:
        obj = json_format.MessageToDict(msg, preserving_proto_field_name=False)
        return json.dumps(obj, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()

    return ref_decode, ref_encode


def sanity_check(name: str, value: Any, pb_cls: type, ref: Codec) -> bytes:
    """Round-trip the workload through both sides; exit non-zero unless all agree."""
    text = codec.encode(value)
    back = codec.decode(type(value), text)
    if back != value or codec.encode(back) != text:
        sys.exit(f"error: {name}: a2a_wire decode(encode(x)) != x; refusing to time a broken codec")
    ref_decode, ref_encode = ref
    if json.loads(ref_encode(ref_decode(pb_cls, text))) != json.loads(text):
        sys.exit(f"error: {name}: json_format reads the JSON differently; results not comparable")
    return text


# --- measurement -------------------------------------------------------------------------------


def _per_call(fn: Callable[[], object], number: int) -> float:
    start = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - start) / number


def compare(
    ours: Callable[[], object], theirs: Callable[[], object], repeats: int, budget: float
) -> tuple[float, float]:
    """Median seconds per call of each; the two alternate (and swap order) so drift hits both alike."""
    loops = [max(1, int(budget / _per_call(fn, 1))) for fn in (ours, theirs)]
    times: list[list[float]] = [[], []]
    for r in range(repeats):
        order = (0, 1) if r % 2 == 0 else (1, 0)
        for k in order:
            times[k].append(_per_call((ours, theirs)[k], loops[k]))
    return statistics.median(times[0]), statistics.median(times[1])


def bench(name: str, value: Any, pb_cls: type, ref: Codec, repeats: int, budget: float) -> None:
    """Print the decode and encode rows of one workload."""
    text = sanity_check(name, value, pb_cls, ref)
    ref_decode, ref_encode = ref
    cls = type(value)
    ours_obj, pb_obj = codec.decode(cls, text), ref_decode(pb_cls, text)
    ops = {
        "decode": (lambda: codec.decode(cls, text), lambda: ref_decode(pb_cls, text)),
        "encode": (lambda: codec.encode(ours_obj), lambda: ref_encode(pb_obj)),
    }
    size = f"{len(text) / 1024:.1f} KB" if len(text) >= 1024 else f"{len(text)} B"
    for op, (ours, theirs) in ops.items():
        t_ours, t_ref = compare(ours, theirs, repeats, budget)
        row = f"{t_ours * 1e6:>10.1f} {t_ref * 1e6:>15.1f} {t_ref / t_ours:>7.1f}x"
        print(f"{name:<9} {size:>9}  {op:<7} {row}")


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


def memory_child(side: str, pb_dir: str, copies: int) -> None:
    """Print the RSS growth per decoded typical Task, in a fresh process for a clean heap."""
    text = codec.encode(make_task(10, 3))
    if side == "ours":
        decode: Callable[[], object] = lambda: codec.decode(Task, text)  # noqa: E731
    else:
        sys.path.insert(0, pb_dir)
        import a2a_pb2

        ref_decode, _ = reference_codec(a2a_pb2)
        decode = lambda: ref_decode(a2a_pb2.Task, text)  # noqa: E731
    # Count only the second half: the first absorbs memory freed earlier (imports, set-up).
    keep = [decode() for _ in range(copies // 2)]
    gc.collect()
    before = rss()
    keep += [decode() for _ in range(copies - copies // 2)]
    gc.collect()
    print((rss() - before) / (copies - copies // 2))


def measure_memory(pb_dir: Path, copies: int) -> tuple[float, float]:
    results = []
    for side in ("ours", "ref"):
        cmd = [sys.executable, __file__, "--memory-child", side, str(pb_dir), str(copies)]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            sys.exit(f"error: memory measurement ({side}) failed:\n{done.stderr}")
        results.append(float(done.stdout.split()[-1]))
    return results[0], results[1]


# --- report --------------------------------------------------------------------------------------


def header() -> None:
    import google.protobuf
    import orjson
    from google.protobuf.internal import api_implementation

    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    print(f"date:     {now}")
    print(f"machine:  {platform.platform()}, {platform.machine()}, {os.cpu_count()} CPUs")
    print(f"python:   {platform.python_implementation()} {platform.python_version()}")
    print(f"ours:     a2a_wire.codec (orjson {orjson.__version__})")
    backend = api_implementation.Type()
    print(
        f"ref:      protobuf {google.protobuf.__version__} ({backend}), a2a_pb2 from {PROTO.name}"
    )
    print("          as the a2a-sdk JSON-RPC server (a2a/server/routes/jsonrpc_dispatcher.py):")
    print("          decode = json.loads + json_format.ParseDict(ignore_unknown_fields=True)")
    print("          encode = json_format.MessageToDict + json.dumps (Starlette JSONResponse)")
    print("timing:   median of repeats, implementations alternated, gc enabled")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short smoke run")
    parser.add_argument(
        "--memory-child", nargs=3, metavar=("SIDE", "PB_DIR", "COPIES"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.memory_child:
        side, pb_dir, copies = args.memory_child
        memory_child(side, pb_dir, int(copies))
        return
    repeats, budget, copies = (3, 0.002, 200) if args.quick else (15, 0.05, 2000)
    with tempfile.TemporaryDirectory(prefix="a2a-bench-") as tmp:
        pb_dir = Path(tmp)
        pb = compile_reference(pb_dir)
        ref = reference_codec(pb)
        header()
        print()
        print(
            f"{'workload':<9} {'JSON':>9}  {'op':<7} {'ours µs':>10} {'json_format µs':>15}  ratio"
        )
        for name, value in workloads():
            bench(name, value, getattr(pb, type(value).__name__), ref, repeats, budget)
        print()
        mine, theirs = measure_memory(pb_dir, copies)
        print(
            f"memory: RSS growth per decoded typical Task (last {copies // 2} of {copies}, own process)"
        )
        print(f"  ours {mine:,.0f} B  json_format/upb {theirs:,.0f} B  ratio {theirs / mine:.2f}x")


if __name__ == "__main__":
    main()
