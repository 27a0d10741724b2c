"""What the command line says when a server stops or goes away under a stream (README exit 7).

A stream ended by an error event before its task settled leaves the task unfinished: the
command prints the error and the task, and exits 7. The error a stopping ``a2a-wire serve``
sends says what becomes of the task: FAILED at the next start on a store of that process alone,
carried on by another process on a shared store (a retryable -32000 a resumable client follows).
"""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web
from e2e_support import cli_async

from a2a_wire.cli._common import print_error
from a2a_wire.cli._serve import stopping_error
from a2a_wire.client import ConnectError
from a2a_wire.errors import InternalError, UnavailableError


def _app(results: list[dict[str, Any]]) -> web.Application:
    async def card(request: web.Request) -> web.Response:
        interface = {
            "url": f"{request.url.origin()}/rpc",
            "protocolBinding": "JSONRPC",
            "protocolVersion": "1.0",
        }
        return web.json_response(
            {
                "name": "stopping",
                "description": "ends its stream with the error of a stopping server",
                "version": "1",
                "supportedInterfaces": [interface],
                "capabilities": {"streaming": True},
                "defaultInputModes": ["text/plain"],
                "defaultOutputModes": ["text/plain"],
                "skills": [],
            }
        )

    async def rpc(request: web.Request) -> web.StreamResponse:
        call = await request.json()
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for answer in results:
            body = {"jsonrpc": "2.0", "id": call["id"], **answer}
            await response.write(b"data: " + json.dumps(body).encode() + b"\n\n")
        await response.write_eof()
        return response

    app = web.Application()
    app.router.add_get("/.well-known/agent-card.json", card)
    app.router.add_post("/rpc", rpc)
    return app


async def test_a_stream_ended_by_the_stop_leaves_the_task_unfinished_exit_7(
    aiohttp_server: Any,
) -> None:
    stopped = stopping_error("t1", shared=False)
    task = {"id": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_WORKING"}}
    error = {"code": stopped.code, "message": stopped.message}
    server = await aiohttp_server(_app([{"result": {"task": task}}, {"error": error}]))
    url = str(server.make_url("/"))
    code, out, err = await cli_async("send", url, "hi", "--stream", "--timeout", "60")
    assert code == 7, err
    assert "working" in out
    first, second = err.splitlines()[-2:]
    assert first.startswith("error: InternalError (-32603): The server is stopping with this task")
    assert "FAILED when the server starts again" in first
    assert second == f"task t1 (a2a-wire get {url} t1 shows it)"


def test_the_stop_says_what_becomes_of_the_task() -> None:
    alone = stopping_error("t1", shared=False)
    assert isinstance(alone, InternalError) and "will be FAILED" in alone.message
    shared = stopping_error("t1", shared=True)
    assert isinstance(shared, UnavailableError)  # a resumable client re-subscribes elsewhere
    assert shared.metadata["taskId"] == "t1" and "another process" in shared.message


def test_a_lost_connection_names_the_task_it_left(capsys: Any) -> None:
    lost = ConnectError("cannot connect to http://127.0.0.1:9/: refused")
    lost.task_id = "t1"  # what the resumable stream's give-up and the CLI record
    print_error(lost, False, "http://127.0.0.1:9/")
    lines = capsys.readouterr().err.splitlines()
    assert lines == [
        "error: ConnectError: cannot connect to http://127.0.0.1:9/: refused",
        "task t1 (a2a-wire get http://127.0.0.1:9/ t1 shows it)",
    ]
