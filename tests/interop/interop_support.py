"""Helpers shared by the interop tests and the scenario scripts they run (no SDK imports here).

The scenario scripts (``run_*.py``) import the a2a-sdk, so they only ever run in a subprocess:
:func:`run_scenario` starts one with the current interpreter and returns the JSON it wrote.
"""

from __future__ import annotations

import contextlib
import copy
import json
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Awaitable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web

from a2a_wire.types import Artifact, StreamResponse, Task, TaskArtifactUpdateEvent, TaskStatus

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


@contextlib.asynccontextmanager
async def serve(app: web.Application) -> AsyncIterator[str]:
    """Serve ``app`` on 127.0.0.1 (a free port) and yield its base URL; stop it afterwards."""
    runner = web.AppRunner(app, shutdown_timeout=1.0)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    try:
        yield f"http://{host}:{port}"
    finally:
        await runner.cleanup()


async def error_name(call: Awaitable[Any]) -> str:
    """The class name of the exception ``call`` raises, or ``"no error"``."""
    try:
        await call
    except Exception as exc:  # the point is to record whatever the library under test raises
        return type(exc).__name__
    return "no error"


def write_result(path: Path, result: Any) -> None:
    """Write a scenario's result as JSON."""
    path.write_text(json.dumps(result, indent=1, sort_keys=True), encoding="utf-8")


def run_scenario(script: str, *args: str, timeout: float = 60.0) -> Any:
    """Run ``tests/interop/<script>`` in a fresh interpreter and return the JSON it wrote.

    Raises:
        AssertionError: the script failed (its stderr is in the message).
    """
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        done = subprocess.run(
            [sys.executable, str(HERE / script), str(out), *args],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if done.returncode != 0 or not out.exists():
            raise AssertionError(f"{script} exited with {done.returncode}:\n{done.stderr[-6000:]}")
        return json.loads(out.read_text(encoding="utf-8"))


def task_of(obj: Any) -> Task:
    """Decode a Task (from either library's JSON) with the a2a-wire codec."""
    return Task.from_dict(obj)


def trimmed(task: Task, length: int | None) -> Task:
    """``task`` with its history cut to the last ``length`` messages (spec 3.2.4), independently."""
    out = copy.copy(task)
    if length is not None:
        out.history = list(task.history[-length:]) if length else []
    return out


def without_artifacts(task: Task) -> Task:
    out = copy.copy(task)
    out.artifacts = []
    return out


@dataclass
class Replayed:
    """What a task stream says about its task, replayed from its events."""

    kinds: list[str]
    task_id: str
    status: TaskStatus | None
    artifacts: list[Artifact]


def replay(events: list[dict[str, Any]]) -> Replayed:
    """Apply a stream's events (ProtoJSON StreamResponses) the way spec 3.2.3 / 4.2.2 describe."""
    kinds = [next(iter(event)) for event in events]
    first = StreamResponse.from_dict(events[0]).task
    assert first is not None, kinds
    status, artifacts = first.status, list(first.artifacts)
    for raw in events[1:]:
        event = StreamResponse.from_dict(raw)
        if event.status_update is not None:
            status = event.status_update.status
        elif event.artifact_update is not None:
            artifacts = _merge(artifacts, event.artifact_update)
        elif event.task is not None:
            status, artifacts = event.task.status, list(event.task.artifacts)
    return Replayed(kinds, first.id, status, artifacts)


def _merge(artifacts: list[Artifact], update: TaskArtifactUpdateEvent) -> list[Artifact]:
    chunk = update.artifact
    assert chunk is not None
    for i, known in enumerate(artifacts):
        if known.artifact_id == chunk.artifact_id:
            if update.append:
                merged = copy.copy(known)
                merged.parts = [*known.parts, *chunk.parts]
                artifacts[i] = merged
            else:
                artifacts[i] = chunk
            return artifacts
    return [*artifacts, chunk]
