"""At-least-once across a crash: deliveries pending when the server is killed are sent after it
restarts (the outbox is in the SQLite file; spec 4.3.3 asks for at least one attempt)."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from push_support import AUTH, ECHO_EVENTS, TOKEN, Hook, wait_until
from server_support import V1, envelope, send_params

from a2a_wire import codec

pytestmark = pytest.mark.slow

APP = Path(__file__).with_name("push_server_app.py")
# The script imports the shared helpers of tests/ (push_support, server_support).
PATH = os.pathsep.join(filter(None, [str(APP.parents[1]), os.environ.get("PYTHONPATH")]))


@asynccontextmanager
async def server_process(db: Path, log: Path) -> AsyncIterator[tuple[int, Any]]:
    """Run the server script; yield its port and process. Stopped (SIGTERM) on exit if alive."""
    with log.open("ab") as err:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            str(APP),
            str(db),
            stdout=asyncio.subprocess.PIPE,
            stderr=err,
            env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": PATH},
        )
    try:
        assert process.stdout is not None
        line = await asyncio.wait_for(process.stdout.readline(), timeout=60)
        assert line.startswith(b"PORT "), (line, log.read_text())
        yield int(line.split()[1]), process
    finally:
        if process.returncode is None:
            process.terminate()
            try:
                await asyncio.wait_for(process.wait(), timeout=10)
            except TimeoutError:
                process.kill()
                await process.wait()


async def call(port: int, method: str, params: Any) -> Any:
    headers = {"Content-Type": "application/json", **V1}
    async with aiohttp.ClientSession() as session:
        url = f"http://127.0.0.1:{port}/"
        body = codec.dumps(envelope(method, params))
        async with session.post(url, data=body, headers=headers) as response:
            answer = codec.loads(await response.read())
    assert "result" in answer, answer
    return answer["result"]


async def test_pending_deliveries_are_sent_after_a_restart(
    aiohttp_server: Any, tmp_path: Path
) -> None:
    hook = Hook(expected=None, script=[503] * 100_000)  # the receiver is down for now
    server = await aiohttp_server(hook.app)
    url = str(server.make_url("/webhook"))
    db, log = tmp_path / "tasks.db", tmp_path / "server.log"
    async with server_process(db, log) as (port, process):
        inline = {"url": url, "token": TOKEN, "authentication": AUTH.to_dict()}
        config = {"taskPushNotificationConfig": inline}
        task = (await call(port, "SendMessage", send_params("echo", config)))["task"]
        assert task["status"]["state"] == "TASK_STATE_COMPLETED"
        await wait_until(lambda: len(hook.requests) >= 3)  # retrying
        process.kill()  # no cleanup, no chance to deliver anything more
        await process.wait()
    assert hook.events == []
    hook.script.clear()  # the receiver is back
    async with server_process(db, log) as (port, _):
        await wait_until(lambda: len(hook.events) == 4)
        assert hook.kinds() == ECHO_EVENTS
        assert all(
            event.status_update is None or event.status_update.task_id == task["id"]
            for event in hook.events
        )
        stored = await call(port, "GetTask", {"id": task["id"]})
        assert stored["status"]["state"] == "TASK_STATE_COMPLETED"
