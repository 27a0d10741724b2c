"""A scripted A2A server that answers with JSON the pinned proto does not fully define.

Both clients read from it (ours in ``test_reading.py``, the SDK's in ``run_sdk_reading.py``).
GetTask answers by task id with one of :data:`TASKS`; SendStreamingMessage answers with
:data:`STREAM`, whose second event has a member no StreamResponse has. Plain aiohttp, no SDK.
"""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

CONTEXT = "ctx-scripted"
TIMESTAMP = "2025-06-01T12:00:00.000Z"


def _message(text: str, *extra_parts: dict[str, Any]) -> dict[str, Any]:
    return {
        "messageId": f"m-{text}",
        "role": "ROLE_AGENT",
        "contextId": CONTEXT,
        "parts": [{"text": text}, *extra_parts],
    }


def _task(task_id: str, status: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"id": task_id, "contextId": CONTEXT, "status": status, **extra}


UNKNOWN_PART = {"hologram": {"uri": "https://example.com/h.holo", "frames": 3}}

TASKS: dict[str, dict[str, Any]] = {
    # v1.1-style: a task generation number and a progress hint on the status.
    "extra-fields": _task(
        "extra-fields",
        {"state": "TASK_STATE_WORKING", "timestamp": TIMESTAMP, "progressHint": {"percent": 40}},
        generation=7,
        history=[_message("working on it")],
    ),
    "no-timestamp": _task("no-timestamp", {"state": "TASK_STATE_SUBMITTED"}),
    "unknown-part": _task(
        "unknown-part",
        {"state": "TASK_STATE_COMPLETED", "timestamp": TIMESTAMP},
        artifacts=[
            {"artifactId": "a1", "parts": [{"text": "kept"}, UNKNOWN_PART]},
        ],
    ),
    "unknown-state": _task("unknown-state", {"state": "TASK_STATE_PAUSED", "timestamp": TIMESTAMP}),
}

STREAM: list[dict[str, Any]] = [
    {"task": _task("streamed", {"state": "TASK_STATE_WORKING", "timestamp": TIMESTAMP})},
    {"progressUpdate": {"taskId": "streamed", "percent": 50}},
    {
        "statusUpdate": {
            "taskId": "streamed",
            "contextId": CONTEXT,
            "status": {"state": "TASK_STATE_COMPLETED", "timestamp": TIMESTAMP},
        }
    },
]


def _envelope(rid: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "result": result}


async def _card(request: web.Request) -> web.Response:
    base = f"{request.scheme}://{request.host}"
    card = {
        "name": "scripted",
        "description": "Answers with what the proto does not define",
        "version": "1.0.0",
        "supportedInterfaces": [
            {"url": base + "/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
        ],
        "capabilities": {"streaming": True},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [],
    }
    return web.json_response(card)


async def _rpc(request: web.Request) -> web.StreamResponse:
    body = await request.json()
    rid, method = body.get("id"), body.get("method")
    if method == "GetTask":
        task = TASKS.get(body.get("params", {}).get("id", ""))
        if task is None:
            error = {"code": -32001, "message": "Task not found"}
            return web.json_response({"jsonrpc": "2.0", "id": rid, "error": error})
        return web.json_response(_envelope(rid, task))
    if method == "SendStreamingMessage":
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for event in STREAM:
            await response.write(f"data: {json.dumps(_envelope(rid, event))}\n\n".encode())
        await response.write_eof()
        return response
    error = {"code": -32601, "message": "Method not found"}
    return web.json_response({"jsonrpc": "2.0", "id": rid, "error": error})


def scripted_app() -> web.Application:
    """The scripted server."""
    app = web.Application()
    app.router.add_get("/.well-known/agent-card.json", _card)
    app.router.add_post("/", _rpc)
    return app
