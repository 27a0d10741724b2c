"""``a2a-wire webhook`` hands on every event once, by ``X-A2A-Delivery-Id`` only.

Equal bodies are different events unless they carry the same delivery id (a task that asks for
input twice sends equal WORKING bodies in two turns); a sender without ids gets every body
printed. The command stops after ``--count`` events, so a repeat it failed to drop would end it
before the last POST (which would then be refused).
"""

from __future__ import annotations

import json
import signal
from typing import Any

import aiohttp
from e2e_support import cli_start, finish, free_port

WORKING = {
    "statusUpdate": {"taskId": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_WORKING"}}
}


async def test_repeats_are_dropped_by_id_and_bodies_without_ids_all_printed() -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/webhook"
    receiver = cli_start("webhook", "--port", str(port), "--count", "4", "--json")
    try:
        assert receiver.stderr is not None and receiver.stdout is not None
        assert "listening on" in receiver.stderr.readline()
        sent: list[int] = []
        async with aiohttp.ClientSession() as http:
            for delivery in ("turn-1", "turn-1", "turn-2", "", ""):
                headers: dict[str, Any] = {"Content-Type": "application/a2a+json"}
                if delivery:
                    headers["X-A2A-Delivery-Id"] = delivery
                async with http.post(url, data=json.dumps(WORKING), headers=headers) as answer:
                    sent.append(answer.status)
        assert sent == [204] * 5
        out, _ = receiver.communicate(timeout=60)  # the fourth event handed on ends it
        assert receiver.returncode == 0
        assert [json.loads(line) for line in out.splitlines()] == [WORKING] * 4
    finally:
        finish(receiver, signal.SIGKILL)
