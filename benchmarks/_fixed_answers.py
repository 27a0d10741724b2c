"""The fixed-answer server of benchmarks/client.py: canned JSON-RPC answers, nothing else.

Run as ``python benchmarks/_fixed_answers.py --port P [--core C] [--events N]``. A bare aiohttp
app on 127.0.0.1 that serves the agent card at its well-known path (one JSONRPC 1.0 interface,
streaming) and answers every POST by its ``method``: ``SendMessage`` with :func:`completed_task`,
``SendStreamingMessage`` with a stream of ``N + 2`` events (the submitted task, ``N`` artifact
chunks of 32 bytes, the final status), each carrying an SSE ``id`` as the a2a-wire server's do.
The answers are encoded once at start; only the request id is spliced in, so the server's own
cost per request is as small as aiohttp allows and the clients' costs are what is measured.

The process pins itself to ``--core`` (Linux ``sched_setaffinity``) before it imports anything
heavy, and serves until SIGTERM or SIGINT.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

HOST = "127.0.0.1"
CARD_PATH = "/.well-known/agent-card.json"
TASK_ID = "00000000-0000-4000-8000-000000000001"
CONTEXT_ID = "00000000-0000-4000-8000-000000000002"
CHUNK = "0123456789abcdefghijklmnopqrstuv"  # 32 bytes
STAMP = "2026-01-01T00:00:00.123456Z"


def card(url: str) -> dict[str, Any]:
    """The agent card, as JSON: streaming, one skill, one JSONRPC 1.0 interface at ``url``."""
    return {
        "name": "bench",
        "description": "fixed answers for the client benchmark",
        "version": "1.0.0",
        "supportedInterfaces": [
            {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
        ],
        "capabilities": {"streaming": True},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "done", "name": "done", "description": "answers", "tags": ["bench"]}],
    }


def _status(state: str) -> dict[str, Any]:
    return {"state": state, "timestamp": STAMP}


def completed_task() -> dict[str, Any]:
    """The answer to SendMessage: a completed task with its request in history and an artifact."""
    return {
        "id": TASK_ID,
        "contextId": CONTEXT_ID,
        "status": _status("TASK_STATE_COMPLETED"),
        "artifacts": [{"artifactId": "a1", "name": "answer", "parts": [{"text": "done"}]}],
        "history": [
            {
                "messageId": "m1",
                "contextId": CONTEXT_ID,
                "taskId": TASK_ID,
                "role": "ROLE_USER",
                "parts": [{"text": "hello"}],
            }
        ],
    }


def stream_results(events: int) -> list[dict[str, Any]]:
    """The ``result`` of each event of a stream with ``events`` artifact chunks."""
    ids = {"taskId": TASK_ID, "contextId": CONTEXT_ID}
    submitted = {"id": TASK_ID, "contextId": CONTEXT_ID, "status": _status("TASK_STATE_SUBMITTED")}
    results: list[dict[str, Any]] = [{"task": submitted}]
    for i in range(events):
        artifact = {"artifactId": "a1", "parts": [{"text": f"{i:08d}{CHUNK[8:]}"}]}
        update: dict[str, Any] = {**ids, "artifact": artifact}
        if i:
            update["append"] = True
        if i == events - 1:
            update["lastChunk"] = True
        results.append({"artifactUpdate": update})
    results.append({"statusUpdate": {**ids, "status": _status("TASK_STATE_COMPLETED")}})
    return results


def run(port: int, events: int) -> None:
    import orjson
    from aiohttp import web

    base = f"http://{HOST}:{port}/"
    card_body = orjson.dumps(card(base))
    # Each answer as the bytes before and after the request id.
    answer = (b'{"jsonrpc":"2.0","id":', b',"result":' + orjson.dumps({"task": completed_task()}))
    frames = [
        (f"id: {n}\ndata: ".encode() + answer[0], b',"result":' + orjson.dumps(result) + b"}\n\n")
        for n, result in enumerate(stream_results(events), start=1)
    ]
    sse_headers = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}

    async def get_card(request: web.Request) -> web.Response:
        return web.Response(body=card_body, content_type="application/json")

    async def post(request: web.Request) -> web.StreamResponse:
        call = orjson.loads(await request.read())
        rid = orjson.dumps(call.get("id"))
        if call.get("method") != "SendStreamingMessage":
            body = answer[0] + rid + answer[1] + b"}"
            return web.Response(body=body, content_type="application/json")
        response = web.StreamResponse(headers=sse_headers)
        await response.prepare(request)
        for head, tail in frames:
            await response.write(head + rid + tail)
        return response

    app = web.Application()
    app.router.add_get(CARD_PATH, get_card)
    app.router.add_post("/", post)
    # Idle connections stay open: under callgrind a client may pause longer than aiohttp's
    # 75 s, and a client that reuses a connection the server just closed sees an error.
    web.run_app(app, host=HOST, port=port, access_log=None, print=None, keepalive_timeout=3600)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--core", type=int, default=None, help="CPU to pin this process to")
    parser.add_argument("--events", type=int, default=1000, help="artifact chunks per stream")
    args = parser.parse_args()
    if args.core is not None and hasattr(os, "sched_setaffinity"):
        try:
            os.sched_setaffinity(0, {args.core})
        except OSError:  # a core this machine does not have: run unpinned
            pass
    run(args.port, args.events)


if __name__ == "__main__":
    main()
