"""The end of an agent's turn on the command line (spec 11.7; README "Exit codes" 8 and 9).

A scripted agent asks for input (or authentication) and then keeps its stream open, held on a
gate the test never opens while the command runs: ``send --stream`` and ``subscribe --turn``
must end at that event by themselves, print the question, the task and how to answer, and exit
8 (input) or 9 (authentication). Each command runs with ``--timeout 60``: one that kept reading
would end with that timeout (exit 3) instead. ``subscribe`` without ``--turn`` follows the
stream into the next turn.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from e2e_support import PYTHON, OpenAgent, cli_async, environment, fake_agent

QUESTION = "What is your name?"
NEEDS = {
    "TASK_STATE_INPUT_REQUIRED": (8, "the agent needs input"),
    "TASK_STATE_AUTH_REQUIRED": (9, "the agent needs authentication"),
}


def _status(state: str, text: str = "") -> dict[str, Any]:
    status: dict[str, Any] = {"state": state}
    if text:
        status["message"] = {
            "messageId": f"m-{state}",
            "role": "ROLE_AGENT",
            "parts": [{"text": text}],
        }
    return {"statusUpdate": {"taskId": "t1", "contextId": "c1", "status": status}}


def _task(state: str) -> dict[str, Any]:
    return {"task": {"id": "t1", "contextId": "c1", "status": {"state": state}}}


@pytest.fixture
async def agent_url(aiohttp_server: Any) -> AsyncIterator[Any]:
    agents: list[OpenAgent] = []

    async def start(agent: OpenAgent) -> str:
        agents.append(agent)
        server = await aiohttp_server(agent.app())
        return str(server.make_url("/"))

    yield start
    for agent in agents:  # let the held handlers finish, so that the server stops cleanly
        agent.gate.set()


@pytest.mark.parametrize("state", list(NEEDS))
async def test_send_stream_ends_the_turn_while_the_stream_stays_open(
    agent_url: Any, state: str
) -> None:
    agent = OpenAgent([_task("TASK_STATE_WORKING"), _status(state, QUESTION)])
    url = await agent_url(agent)
    code, out, err = await cli_async("send", url, "hi", "--stream", "--timeout", "60")
    wanted, what = NEEDS[state]
    assert code == wanted, err
    assert not agent.gate.is_set()  # the agent never closed its stream
    shown = state.removeprefix("TASK_STATE_").lower().replace("_", "-")
    assert f"{shown} {QUESTION}" in out
    lines = err.splitlines()
    assert f"{what}: {QUESTION}" in lines, err
    assert any(
        line.startswith("task t1; answer with: a2a-wire send ") and line.endswith("--task-id t1")
        for line in lines
    ), err


async def test_send_stream_json_ends_the_turn_with_one_object_on_stderr(agent_url: Any) -> None:
    agent = OpenAgent([_task("TASK_STATE_WORKING"), _status("TASK_STATE_INPUT_REQUIRED", QUESTION)])
    url = await agent_url(agent)
    code, out, err = await cli_async("send", url, "hi", "--stream", "--json", "--timeout", "60")
    assert code == 8, err
    assert [next(iter(json.loads(line))) for line in out.splitlines()] == ["task", "statusUpdate"]
    ended = json.loads(err.splitlines()[-1])["turnEnded"]
    assert ended["taskId"] == "t1" and ended["question"] == QUESTION
    assert ended["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert ended["answer"].endswith(" TEXT --task-id t1")


@pytest.mark.parametrize("state", list(NEEDS))
async def test_subscribe_turn_stops_at_the_end_of_the_turn(agent_url: Any, state: str) -> None:
    agent = OpenAgent([_task(state)], [_status("TASK_STATE_COMPLETED")])
    url = await agent_url(agent)
    code, out, err = await cli_async("subscribe", url, "t1", "--turn", "--timeout", "60")
    assert code == NEEDS[state][0], err
    assert not agent.gate.is_set()
    assert "--task-id t1" in err and "completed" not in out


async def test_subscribe_follows_across_turns_by_default(agent_url: Any) -> None:
    agent = OpenAgent(
        [_task("TASK_STATE_WORKING"), _status("TASK_STATE_INPUT_REQUIRED", QUESTION)],
        [_status("TASK_STATE_WORKING"), _status("TASK_STATE_COMPLETED", "done")],
    )
    url = await agent_url(agent)
    proc = await asyncio.create_subprocess_exec(
        PYTHON,
        "-m",
        "a2a_wire",
        "subscribe",
        url,
        "t1",
        "--json",
        "--timeout",
        "60",
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=environment(),
    )
    try:
        assert proc.stdout is not None and proc.stderr is not None
        seen = []
        async with asyncio.timeout(60):
            while len(seen) < 2:  # the task, then the question: the first turn's end
                seen.append(json.loads(await proc.stdout.readline()))
            agent.gate.set()  # the next turn, on the same stream
            rest, err = await proc.communicate()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    seen += [json.loads(line) for line in rest.decode().splitlines()]
    states = [e["statusUpdate"]["status"]["state"] for e in seen if "statusUpdate" in e]
    assert states == ["TASK_STATE_INPUT_REQUIRED", "TASK_STATE_WORKING", "TASK_STATE_COMPLETED"]
    assert proc.returncode == 0, err.decode()


async def test_subscribe_help_says_it_follows_across_turns() -> None:
    code, out, _ = await cli_async("subscribe", "--help")
    assert code == 0
    assert "across turns" in out and "--turn" in out


@pytest.mark.parametrize("state", list(NEEDS))
async def test_blocking_send_says_how_to_answer(aiohttp_server: Any, state: str) -> None:
    task = {
        "id": "t1",
        "contextId": "c1",
        "status": _status(state, QUESTION)["statusUpdate"]["status"],
    }
    server = await aiohttp_server(fake_agent(lambda method, params: {"task": task}))
    code, out, err = await cli_async("send", str(server.make_url("/")), "hi")
    wanted, what = NEEDS[state]
    assert code == wanted, err
    assert QUESTION in out
    assert err.splitlines()[0] == f"{what}: {QUESTION}", err
    assert err.splitlines()[1].endswith(" TEXT --task-id t1"), err
