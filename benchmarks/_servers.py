"""The servers that benchmarks/server.py measures, one per process.

Run as ``python benchmarks/_servers.py MODE --port P [--core C] [--db PATH] [--agent A]
[--dsn DSN --schema S] [--gate-dir D]``. MODE is one of:

``ours-sqlite``
    a2a_wire's server (:func:`a2a_wire.server.create_app`) on the default durable store,
    :class:`~a2a_wire.server.store.SQLiteTaskStore` at ``--db``, under ``aiohttp.web``.
``ours-memory``
    the same on :class:`~a2a_wire.server.store.InMemoryTaskStore`.
``sdk``
    the official SDK (a2a-sdk): ``DefaultRequestHandler`` + ``InMemoryTaskStore`` behind its
    JSON-RPC Starlette routes, under uvicorn, one worker.
``sdk-sqlite``
    the same on the SDK's own durable store, ``DatabaseTaskStore`` (SQLAlchemy on aiosqlite) at
    ``--db`` (the ``a2a-sdk[sqlite]`` extra).
``sdk-postgresql``
    the SDK's cluster mode on PostgreSQL ``--dsn``, its tables in the existing schema
    ``--schema`` (benchmarks/_sdk_servers.py says what that mode is).
``ceiling``
    a bare aiohttp handler: it reads the JSON-RPC body, parses it, and answers a fixed result
    (a completed task, or a fixed three-event SSE stream for SendStreamingMessage). Nothing built
    on aiohttp can answer faster on this machine.

Both agents do the same work: take the user's message, add one text artifact, complete the task.
A stream therefore carries three events: the task, the artifact update and the final status.
The agents are in benchmarks/_agents.py (ours) and benchmarks/_sdk_servers.py (the SDK's).
With ``--agent chunks`` (benchmarks/stream_chunks.py) they instead read a number N from the
message's text and stream one artifact of N chunks of 32 bytes (:func:`chunk_text`: chunk ``i``
starts with ``i``; the first creates the artifact, the others have ``append`` set, the last
``lastChunk``), then complete the task. ``--agent ticks`` is the gated steady source of
benchmarks/scale_latency.py (benchmarks/_ticks.py, gate files in ``--gate-dir``).
They yield to the event loop after each chunk, as an agent that awaits its model's output does
(without it, a2a_wire's in-memory store never suspends the agent, so the stream's writer cannot
run and the stream is closed once ``stream_queue_size`` events are queued).

The process pins itself to ``--core`` (Linux ``sched_setaffinity``) before it imports anything
heavy, and serves on 127.0.0.1 until it gets SIGTERM or SIGINT. The SDK is imported only in
its own mode: it loads its own compiled ``a2a.proto`` descriptors.
"""

from __future__ import annotations

import argparse
import logging
import os
from typing import Any

HOST = "127.0.0.1"
ARTIFACT_TEXT = "done"
CHUNK = "0123456789abcdefghijklmnopqrstuv"  # 32 bytes
MODES = ("ours-sqlite", "ours-memory", "sdk", "sdk-sqlite", "sdk-postgresql", "ceiling")
AGENTS = ("done", "chunks", "ticks")


def chunk_text(i: int) -> str:
    """Chunk ``i`` of the ``chunks`` agent: 32 bytes, its number first (so order shows)."""
    return f"{i:08d}{CHUNK[8:]}"


def _pin(core: int | None) -> None:
    if core is not None and hasattr(os, "sched_setaffinity"):
        try:
            os.sched_setaffinity(0, {core})
        except OSError:  # a core this machine does not have: run unpinned
            pass


# --- a2a_wire -----------------------------------------------------------------------------------


def bench_card() -> Any:
    """The agent card of the benchmarks' a2a-wire servers: streaming, one skill."""
    from a2a_wire.types import AgentCapabilities, AgentCard, AgentSkill

    return AgentCard(
        name="bench",
        description="benchmark agent",
        version="1.0.0",
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="done", name="done", description="answers done", tags=["bench"])],
    )


def run_ours(port: int, db: str | None, agent: str) -> None:
    from _agents import ChunkAgent, TrivialAgent
    from aiohttp import web

    from a2a_wire.server import AgentExecutor, create_app
    from a2a_wire.server.store import EventLogStore, InMemoryTaskStore, SQLiteTaskStore

    card = bench_card()
    store: EventLogStore = SQLiteTaskStore(db) if db else InMemoryTaskStore()
    executor: AgentExecutor = ChunkAgent() if agent == "chunks" else TrivialAgent()
    app = create_app(card, executor, store=store)
    web.run_app(app, host=HOST, port=port, access_log=None, print=None, handle_signals=True)


# --- the official SDK ---------------------------------------------------------------------------


# --- the ceiling ---------------------------------------------------------------------------------


def _fixed_task(state: str) -> dict[str, Any]:
    return {
        "id": "00000000-0000-4000-8000-000000000001",
        "contextId": "00000000-0000-4000-8000-000000000002",
        "status": {"state": state, "timestamp": "2026-01-01T00:00:00Z"},
        "artifacts": [{"artifactId": "a1", "parts": [{"text": ARTIFACT_TEXT}]}],
        "history": [{"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hello"}]}],
    }


def run_ceiling(port: int) -> None:
    import orjson
    from aiohttp import web

    completed = _fixed_task("TASK_STATE_COMPLETED")
    submitted = {k: v for k, v in _fixed_task("TASK_STATE_SUBMITTED").items() if k != "artifacts"}
    ids = {"taskId": completed["id"], "contextId": completed["contextId"]}
    events = [
        {"task": submitted},
        {"artifactUpdate": {**ids, "artifact": completed["artifacts"][0]}},
        {"statusUpdate": {**ids, "status": completed["status"]}},
    ]
    headers = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}

    async def handle(request: web.Request) -> web.StreamResponse:
        call = orjson.loads(await request.read())
        rid = call.get("id")
        if call.get("method") != "SendStreamingMessage":
            body = orjson.dumps({"jsonrpc": "2.0", "id": rid, "result": {"task": completed}})
            return web.Response(body=body, content_type="application/json")
        response = web.StreamResponse(headers=headers)
        await response.prepare(request)
        for event in events:
            frame = orjson.dumps({"jsonrpc": "2.0", "id": rid, "result": event})
            await response.write(b"data: " + frame + b"\n\n")
        return response

    app = web.Application()
    app.router.add_post("/", handle)
    web.run_app(app, host=HOST, port=port, access_log=None, print=None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("mode", choices=MODES)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--core", type=int, default=None, help="CPU to pin this process to")
    parser.add_argument("--db", default=None, help="SQLite file (ours-sqlite, sdk-sqlite)")
    parser.add_argument("--agent", choices=AGENTS, default="done", help="what the agent does")
    parser.add_argument("--dsn", default=None, help="PostgreSQL (sdk-postgresql)")
    parser.add_argument("--schema", default=None, help="its schema, made by the caller")
    parser.add_argument("--gate-dir", default=None, help="gate files of the ticks agent")
    args = parser.parse_args()
    _pin(args.core)
    logging.basicConfig(level=logging.WARNING)
    if args.mode.endswith("-sqlite") and not args.db:
        parser.error(f"{args.mode} needs --db")
    if args.mode.endswith("-postgresql") and not (args.dsn and args.schema):
        parser.error(f"{args.mode} needs --dsn and --schema")
    if args.mode in ("ours-sqlite", "ours-memory"):
        run_ours(args.port, args.db if args.mode == "ours-sqlite" else None, args.agent)
    elif args.mode.startswith("sdk"):
        from _sdk_servers import run_sdk

        db = args.db if args.mode == "sdk-sqlite" else None
        dsn = args.dsn if args.mode == "sdk-postgresql" else None
        run_sdk(args.port, args.agent, db=db, dsn=dsn, schema=args.schema, gate_dir=args.gate_dir)
    else:
        run_ceiling(args.port)


if __name__ == "__main__":
    main()
