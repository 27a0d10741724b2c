"""Helpers of the end-to-end tests: ``a2a-wire serve`` as a subprocess, and CLI runs.

Every server is started on 127.0.0.1 and a free port, with its stderr (the structured log) in a
file, and is stopped by the test that started it (:meth:`ServerProcess.close` kills whatever is
still running). CLI commands run as ``python -m a2a_wire`` with the venv's interpreter.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web
from ports import free_port as free_port  # the e2e tests take it from here

from a2a_wire.server import AgentExecutor, EventQueue, RequestContext, TaskUpdater

PYTHON = sys.executable
SCRIPT = Path(PYTHON).parent / "a2a-wire"
TESTS = Path(__file__).resolve().parent


def environment(**extra: str) -> dict[str, str]:
    """The environment for subprocesses: no inherited credentials, tests/ importable."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("A2A_WIRE_")}
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS), env.get("PYTHONPATH", "")])
    env.update(extra)
    return env


def cli(
    *args: str, timeout: float = 30.0, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``a2a-wire ARGS`` and return its exit code and output."""
    return subprocess.run(
        [PYTHON, "-m", "a2a_wire", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env or environment(),
        stdin=subprocess.DEVNULL,
    )


async def cli_async(
    *args: str, stdin: bytes = b"", timeout: float = 60.0, env: dict[str, str] | None = None
) -> tuple[int, str, str]:
    """Run ``a2a-wire ARGS`` without blocking the event loop (which may serve a fake agent).

    Returns:
        The exit code, stdout and stderr.
    """
    proc = await asyncio.create_subprocess_exec(
        PYTHON,
        "-m",
        "a2a_wire",
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env or environment(),
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(stdin), timeout)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


def scripted_card(
    rpc_url: str,
    *,
    name: str = "fake",
    description: str = "a scripted agent",
    streaming: bool = False,
) -> dict[str, Any]:
    """The card of a scripted agent whose JSON-RPC interface is ``rpc_url`` (ProtoJSON)."""
    interface = {"url": rpc_url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
    return {
        "name": name,
        "description": description,
        "version": "1",
        "supportedInterfaces": [interface],
        "capabilities": {"streaming": True} if streaming else {},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [],
    }


@dataclass
class OpenAgent:
    """A scripted streaming agent: streams ``first``, then holds the stream open (no end, no
    keep-alive) until ``gate`` is set, then streams ``after`` and ends it.

    ``sent_first`` is set once ``first`` is out; ``traceparents`` are the ``traceparent``
    headers of the requests received; ``task`` answers GetTask (the ``task`` member of a result).
    """

    first: list[dict[str, Any]]
    after: list[dict[str, Any]] = field(default_factory=list)
    gate: asyncio.Event = field(default_factory=asyncio.Event)
    sent_first: asyncio.Event = field(default_factory=asyncio.Event)
    traceparents: list[str] = field(default_factory=list)
    task: dict[str, Any] | None = None

    async def rpc(self, request: web.Request) -> web.StreamResponse:
        """The JSON-RPC endpoint: GetTask answers ``task``, every other call gets the script."""
        self.traceparents.append(request.headers.get("traceparent", ""))
        call = await request.json()
        if call["method"] == "GetTask":
            assert self.task is not None, "GetTask was not expected"
            return web.json_response({"jsonrpc": "2.0", "id": call["id"], "result": self.task})
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)

        async def send(results: list[dict[str, Any]]) -> None:
            for result in results:
                body = {"jsonrpc": "2.0", "id": call["id"], "result": result}
                await response.write(b"data: " + json.dumps(body).encode() + b"\n\n")

        await send(self.first)
        self.sent_first.set()
        await self.gate.wait()
        await send(self.after)
        await response.write_eof()
        return response

    def app(self) -> web.Application:
        """The agent: its card (a streaming one) and :meth:`rpc` at ``/rpc``."""

        async def card(request: web.Request) -> web.Response:
            url = f"{request.url.origin()}/rpc"
            what = "keeps its stream open after asking"
            return web.json_response(
                scripted_card(url, name="open", description=what, streaming=True)
            )

        app = web.Application()
        app.router.add_get("/.well-known/agent-card.json", card)
        app.router.add_post("/rpc", self.rpc)
        return app


def fake_agent(
    answer: Callable[[str, dict[str, Any]], dict[str, Any]], rpc_url: str = ""
) -> web.Application:
    """A scripted agent for the CLI: a card, and ``answer(method, params)`` as each result.

    Args:
        answer: The JSON-RPC ``result`` for a call (ProtoJSON); it may record the params.
        rpc_url: The JSON-RPC URL the card names; ``/rpc`` of the card's own origin by default.
    """

    async def card(request: web.Request) -> web.Response:
        return web.json_response(scripted_card(rpc_url or f"{request.url.origin()}/rpc"))

    async def rpc(request: web.Request) -> web.Response:
        call = await request.json()
        result = answer(call["method"], call.get("params", {}))
        return web.json_response({"jsonrpc": "2.0", "id": call["id"], "result": result})

    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_get("/.well-known/agent-card.json", card)
    app.router.add_post("/rpc", rpc)
    return app


def cli_start(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """Start ``a2a-wire ARGS`` in the background (the caller must wait for or kill it)."""
    return subprocess.Popen(
        [PYTHON, "-m", "a2a_wire", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env or environment(),
        stdin=subprocess.DEVNULL,
    )


def finish(proc: subprocess.Popen[str], sig: int | None = None, timeout: float = 10.0) -> int:
    """Stop a background command (``sig`` first, then kill), close its pipes, return its code."""
    try:
        if sig is not None and proc.poll() is None:
            proc.send_signal(sig)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=timeout)
    finally:
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
    return proc.returncode


def json_lines(text: str) -> list[dict[str, Any]]:
    """Every line of ``--json`` output, parsed."""
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def write_config(path: Path, text: str, **values: object) -> Path:
    """Write a TOML configuration, filling ``{name}`` placeholders."""
    path.write_text(text.format(**values), encoding="utf-8")
    return path


class ServerProcess:
    """``a2a-wire serve`` in a subprocess.

    Args:
        args: Arguments after ``serve``.
        log: File that receives the server's stderr.
        port: The port it listens on (for :attr:`url`).
        env: Its environment.
        python: The interpreter that runs it (another installation's, e.g. a wheel's venv).
    """

    def __init__(
        self,
        args: list[str],
        log: Path,
        port: int,
        env: dict[str, str] | None = None,
        *,
        python: str = PYTHON,
    ) -> None:
        self.python = python
        self.args = args
        self.log_path = log
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.env = env or environment()
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 60.0) -> ServerProcess:
        """Start it and wait for its (new) ``listening`` log line."""
        offset = len(self.log()) if self.log_path.exists() else 0
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                [self.python, "-m", "a2a_wire", "serve", *self.args],
                stdout=subprocess.DEVNULL,
                stderr=log,
                stdin=subprocess.DEVNULL,
                env=self.env,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if "listening" in self.log()[offset:]:
                return self
            if self.proc.poll() is not None:
                raise AssertionError(f"server exited {self.proc.returncode}:\n{self.log()}")
            time.sleep(0.02)
        raise AssertionError(f"server did not start:\n{self.log()}")

    def log(self) -> str:
        """Everything the server logged so far."""
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 10.0) -> int:
        """Send ``sig`` and wait for the exit code."""
        assert self.proc is not None
        self.proc.send_signal(sig)
        return self.proc.wait(timeout=timeout)

    def close(self) -> None:
        """Kill it if it still runs (always call this in ``finally``)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


def write_atomically(path: Path, text: str) -> None:
    """Write ``path`` so that a reader that sees it exist also sees all of ``text``."""
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text, encoding="utf-8")
    partial.replace(path)


async def until_exists(path: Path) -> None:
    """Return once ``path`` exists (a gate the test opens; it never waits for a time)."""
    while not path.exists():
        await asyncio.sleep(0.01)


class ShoutAgent(AgentExecutor):
    """A user executor for ``module:attribute`` tests: answers with the text upper-cased.

    Args:
        suffix: Appended to the answer (an executor option).
    """

    def __init__(self, suffix: str = "") -> None:
        self.suffix = suffix

    async def execute(self, context: RequestContext, events: EventQueue) -> None:
        assert context.message is not None
        text = " ".join(p.text or "" for p in context.message.parts)
        updater = TaskUpdater(events, context)
        await updater.add_artifact(text.upper() + self.suffix, name="shout")
        await updater.complete()


def make_shout(suffix: str = "!") -> ShoutAgent:
    """A factory executor reference (``e2e_support:make_shout``)."""
    return ShoutAgent(suffix)


class StubbornAgent(AgentExecutor):
    """An agent that ignores cancellation (``e2e_support:StubbornAgent``), for the stop tests.

    Args:
        marker: A file it writes the task id to once the task is WORKING; the test waits for it.
    """

    def __init__(self, marker: str) -> None:
        self.marker = Path(marker)

    async def execute(self, context: RequestContext, events: EventQueue) -> None:
        await TaskUpdater(events, context).start_work()
        write_atomically(self.marker, context.task_id)
        while True:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                continue  # deliberately ignored

    async def cancel(self, context: RequestContext, events: EventQueue) -> None:
        """Does nothing: the run goes on."""


class ChunkAgent(AgentExecutor):
    """Streams one artifact of ``chunks`` tiny chunks (``e2e_support:ChunkAgent``), for kill tests.

    Chunk ``i`` is one text part ``f"{i:05d}"``, so a stored artifact shows which chunks it holds
    and in which order. The agent never sends the last chunk: it waits before it until the run
    is cancelled, so the artifact is still open whenever the test kills the server.

    Args:
        chunks: The artifact's length in chunks.
    """

    def __init__(self, chunks: int = 5000) -> None:
        self.chunks = chunks

    async def execute(self, context: RequestContext, events: EventQueue) -> None:
        updater = TaskUpdater(events, context)
        await updater.start_work()
        for i in range(self.chunks - 1):
            await updater.add_artifact(f"{i:05d}", artifact_id="out", append=i > 0)
        await asyncio.Event().wait()  # the last chunk never comes: the run ends by cancellation


class GatedEcho(AgentExecutor):
    """The built-in echo, held at a gate the test controls (``e2e_support:GatedEcho``).

    A run says WORKING ("Echoing N characters", as ``echo`` does) and sends the first chunk of
    the text, then waits while the file ``gate`` does not exist: the test creates it to let the
    runs go on (and removes it to hold the next ones), or cancels the task. Then come the other
    chunks and COMPLETED. A task that must stay running until the test acts is therefore never a
    race against the clock. With ``first_gate`` the first chunk waits for that file in the same
    way (e.g. until a push config exists); with ``started``, a run writes its task id to
    ``started/<task id>`` once it waits at ``gate``.

    Args:
        gate: The file whose existence lets the chunks after the first one go.
        chunk_size: Characters per artifact chunk.
        first_gate: Optional file whose existence lets the first chunk go.
        started: Optional directory for the files that say a run is held.
    """

    def __init__(
        self, gate: str, chunk_size: int = 16, first_gate: str = "", started: str = ""
    ) -> None:
        self.gate = Path(gate)
        self.chunk_size = chunk_size
        self.first_gate = Path(first_gate) if first_gate else None
        self.started = Path(started) if started else None

    async def execute(self, context: RequestContext, events: EventQueue) -> None:
        assert context.message is not None
        text = "\n".join(p.text for p in context.message.parts if p.text is not None)
        size = self.chunk_size
        chunks = [text[i : i + size] for i in range(0, len(text), size)] or [""]
        updater = TaskUpdater(events, context)
        await updater.start_work(f"Echoing {len(text)} characters")
        if self.first_gate is not None:
            await until_exists(self.first_gate)
        artifact_id = ""
        for index, chunk in enumerate(chunks):
            artifact_id = await updater.add_artifact(
                chunk,
                artifact_id=artifact_id,
                name="echo",
                append=index > 0,
                last_chunk=index == len(chunks) - 1,
            )
            if index == 0:
                await self._hold(context.task_id)
        await updater.complete()

    async def _hold(self, task_id: str) -> None:
        if self.started is not None:
            write_atomically(self.started / task_id, task_id)
        await until_exists(self.gate)
