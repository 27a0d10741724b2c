"""Durability of ``a2a-wire serve`` on SQLite and PostgreSQL: SIGKILL under load loses no
acknowledged task.

Four clients send SendMessage with ``returnImmediately`` as fast as the server answers; every
task id the server acknowledged is recorded with the state it was acknowledged in. The server
is killed with SIGKILL mid-load (no shutdown code runs), restarted on the same data directory,
and every acknowledged task must be found by GetTask in at least its acknowledged state. Tasks
that were still running are FAILED with the restart message (recovery, docs/server.md); the
others finished before the kill. Both kinds are there whatever the timing: the kill comes only
once an acknowledged task is seen COMPLETED, and one task (``e2e_support:GatedEcho`` behind a
gate never opened) is still running by construction.

On PostgreSQL the rule differs by design (``store_support.ServeStorage``): the restarted
process fails the dead one's tasks by lease takeover, not on open, with the message that the
process was lost; the test waits until no acknowledged task is running any more.
"""

from __future__ import annotations

import asyncio
import signal
import uuid
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from e2e_support import ServerProcess, free_port, write_config
from store_support import ServeStorage

pytestmark = [pytest.mark.slow, pytest.mark.timeout(60)]

CONFIG = """
[server]
port = {port}
data_dir = "{data}"
log_level = "warning"

[[skills]]
executor = "echo"
default = true
options = {{ chunk_size = 1, chunk_delay_seconds = 0.04 }}

[[skills]]
id = "held"
executor = "e2e_support:GatedEcho"
options = {{ gate = "{gate}" }}
"""
PATIENCE = 30.0  # seconds; only a failing test waits that long

HEADERS = {"A2A-Version": "1.0", "Content-Type": "application/json"}
RANK = {
    "TASK_STATE_SUBMITTED": 1,
    "TASK_STATE_WORKING": 2,
    "TASK_STATE_COMPLETED": 3,
    "TASK_STATE_FAILED": 3,
}


def _send(n: int, skill: str = "") -> dict[str, Any]:
    message: dict[str, Any] = {
        "messageId": str(uuid.uuid4()),
        "role": "ROLE_USER",
        "parts": [{"text": "0123456789"}],
    }
    if skill:
        message["metadata"] = {"skillId": skill}
    params = {"message": message, "configuration": {"returnImmediately": True}}
    return {"jsonrpc": "2.0", "id": n, "method": "SendMessage", "params": params}


async def _client(
    session: aiohttp.ClientSession, url: str, acked: dict[str, str], stop: asyncio.Event
) -> None:
    n = 0
    while not stop.is_set():
        n += 1
        try:
            async with session.post(url, json=_send(n), headers=HEADERS) as response:
                answer = await response.json()
        except (aiohttp.ClientError, TimeoutError):
            return  # the server is gone
        task = answer["result"]["task"]
        acked[task["id"]] = task["status"]["state"]
        await asyncio.sleep(0.01)


async def _get(session: aiohttp.ClientSession, url: str, task_id: str) -> dict[str, Any]:
    """GetTask, again after its Retry-After while the server answers 503 (-32000): a burst of
    reads on a busy machine may outwait the pool's deadline, which is not a lost task."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": task_id}}
    while True:
        async with session.post(url, json=body, headers=HEADERS) as response:
            answer: dict[str, Any] = await response.json()
            retry_after = response.headers.get("Retry-After")
        if answer.get("error", {}).get("code") != -32000:
            break
        await asyncio.sleep(float(retry_after or "1"))
    assert "result" in answer, answer
    return answer["result"]


async def _until_one_completed(
    session: aiohttp.ClientSession, url: str, acked: dict[str, str]
) -> None:
    """Wait until an acknowledged task is COMPLETED (some finish before the kill)."""
    async with asyncio.timeout(PATIENCE):
        while len(acked) < 20:  # the load is well under way
            await asyncio.sleep(0.01)
        first = next(iter(acked))
        while (await _get(session, url, first))["status"]["state"] != "TASK_STATE_COMPLETED":
            await asyncio.sleep(0.02)


async def _send_held(session: aiohttp.ClientSession, url: str, acked: dict[str, str]) -> str:
    """Acknowledge one task that is still running at the kill, whatever the timing."""
    async with session.post(url, json=_send(0, skill="held"), headers=HEADERS) as response:
        task = (await response.json())["result"]["task"]
    acked[task["id"]] = task["status"]["state"]
    return str(task["id"])


async def _settled(
    session: aiohttp.ClientSession, url: str, acked: dict[str, str]
) -> list[dict[str, Any]]:
    """Every acknowledged task once none is running (at once on SQLite: recovery on open; on
    PostgreSQL once the takeover after the lease has failed them)."""
    async with asyncio.timeout(PATIENCE):
        while True:
            found = await asyncio.gather(*(_get(session, url, task_id) for task_id in acked))
            if all(RANK[t["status"]["state"]] == 3 for t in found):
                return found
            await asyncio.sleep(0.05)


async def test_sigkill_under_load_keeps_every_acknowledged_task(
    tmp_path: Path, serve_storage: ServeStorage
) -> None:
    port = free_port()
    config = write_config(
        tmp_path / "d.toml",
        serve_storage.config(CONFIG),
        port=port,
        data=tmp_path / "data",
        gate=tmp_path / "never",
    )
    server = ServerProcess(["--config", str(config)], tmp_path / "server.log", port)
    url = server.url + "/"
    acked: dict[str, str] = {}
    stop = asyncio.Event()
    try:
        await asyncio.to_thread(server.start)
        async with aiohttp.ClientSession() as session:
            clients = [asyncio.create_task(_client(session, url, acked, stop)) for _ in range(4)]
            await _until_one_completed(session, url, acked)
            held = await _send_held(session, url, acked)
            assert server.proc is not None
            server.proc.send_signal(signal.SIGKILL)
            await asyncio.wait_for(asyncio.gather(*clients), timeout=PATIENCE)
        assert await asyncio.to_thread(server.proc.wait, 10) == -signal.SIGKILL
        stop.set()
        assert len(acked) >= 20, len(acked)

        await asyncio.to_thread(server.start)
        async with aiohttp.ClientSession() as session:
            found = await _settled(session, url, acked)
    finally:
        stop.set()
        server.close()
    lost = serve_storage.lost_message
    outcomes = {"TASK_STATE_COMPLETED": 0, "TASK_STATE_FAILED": 0}
    for task in found:
        state = task["status"]["state"]
        assert RANK[state] >= RANK[acked[task["id"]]]
        assert state in outcomes, task
        outcomes[state] += 1
        if state == "TASK_STATE_FAILED":
            assert task["status"]["message"]["parts"][0]["text"] == lost
    assert outcomes["TASK_STATE_FAILED"] > 0  # some were running when the process died
    assert next(t for t in found if t["id"] == held)["status"]["state"] == "TASK_STATE_FAILED"
    assert outcomes["TASK_STATE_COMPLETED"] > 0  # and some had finished before
