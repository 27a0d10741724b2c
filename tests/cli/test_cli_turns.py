"""The end of an agent's turn on the command line (spec 11.7; README "Exit codes" 8 and 9).

A scripted agent asks for input (or authentication) and then keeps its stream open, held on a
gate the test never opens while the command runs: ``send --stream`` and ``subscribe --turn``
must end at that event by themselves, print the question, the task and how to answer, and exit
8 (input) or 9 (authentication). Each command runs with ``--timeout 60``: one that kept reading
would end with that timeout (exit 3) instead. The event may be a status update, the Task of a
new message, or come in a follow-up's stream (``--task-id``) that opens with the Task still
asking the last question, or, as the a2a-sdk server sends it, with an update. ``subscribe``
without ``--turn`` follows the stream into the next turn.
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


def _task(state: str, text: str = "") -> dict[str, Any]:
    status = _status(state, text)["statusUpdate"]["status"]
    return {"task": {"id": "t1", "contextId": "c1", "status": status}}


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


async def _ends_the_turn(
    agent_url: Any, agent: OpenAgent, state: str, command: str, *args: str
) -> tuple[str, str]:
    """Run ``a2a-wire COMMAND URL ARGS``; it must end with the state's code, the agent held."""
    url = await agent_url(agent)
    code, out, err = await cli_async(command, url, *args, "--timeout", "60")
    assert code == NEEDS[state][0], err
    assert not agent.gate.is_set()  # the agent still holds its stream open
    return out, err


def _says_how_to_answer(err: str, state: str, question: str) -> None:
    lines = err.splitlines()
    assert f"{NEEDS[state][1]}: {question}" in lines, err
    assert lines[-1].startswith("task t1; answer with: a2a-wire send "), err
    assert lines[-1].endswith(" TEXT --task-id t1"), err


@pytest.mark.parametrize("state", list(NEEDS))
async def test_send_stream_ends_the_turn_while_the_stream_stays_open(
    agent_url: Any, state: str
) -> None:
    agent = OpenAgent([_task("TASK_STATE_WORKING"), _status(state, QUESTION)])
    out, err = await _ends_the_turn(agent_url, agent, state, "send", "hi", "--stream")
    shown = state.removeprefix("TASK_STATE_").lower().replace("_", "-")
    assert f"{shown} {QUESTION}" in out
    _says_how_to_answer(err, state, QUESTION)


@pytest.mark.parametrize("state", list(NEEDS))
async def test_send_stream_json_ends_the_turn_with_one_object_on_stderr(
    agent_url: Any, state: str
) -> None:
    agent = OpenAgent([_task("TASK_STATE_WORKING"), _status(state, QUESTION)])
    out, err = await _ends_the_turn(agent_url, agent, state, "send", "hi", "--stream", "--json")
    assert [next(iter(json.loads(line))) for line in out.splitlines()] == ["task", "statusUpdate"]
    ended = json.loads(err.splitlines()[-1])["turnEnded"]
    assert ended["taskId"] == "t1" and ended["question"] == QUESTION
    assert ended["state"] == state
    assert ended["answer"].endswith(" TEXT --task-id t1")


@pytest.mark.parametrize("state", list(NEEDS))
async def test_send_stream_ends_at_a_new_task_that_opens_asking(agent_url: Any, state: str) -> None:
    agent = OpenAgent([_task(state, QUESTION)], [_status("TASK_STATE_COMPLETED")])
    out, err = await _ends_the_turn(agent_url, agent, state, "send", "hi", "--stream")
    assert QUESTION in out and "completed" not in out
    _says_how_to_answer(err, state, QUESTION)


@pytest.mark.parametrize("state", list(NEEDS))
@pytest.mark.parametrize("opens_with", ["task", "update"])
async def test_a_follow_up_that_asks_again_ends_its_turn(
    agent_url: Any, state: str, opens_with: str
) -> None:
    # An a2a-wire server's follow-up stream opens with the Task as it was (still asking); the
    # a2a-sdk 1.3.0 server's with an update, so the CLI fetches the task for its print.
    again = "And your family name?"
    opening = [_task(state, QUESTION)] if opens_with == "task" else []
    agent = OpenAgent(
        [*opening, _status("TASK_STATE_WORKING"), _status(state, again)],
        [_status("TASK_STATE_COMPLETED")],
        task=_task(state, again)["task"],
    )
    follow_up = ("Ada", "--task-id", "t1", "--stream")
    out, err = await _ends_the_turn(agent_url, agent, state, "send", *follow_up)
    assert out.index("working") < out.index(again)
    assert err.count("not the Task (spec 3.1.2)") == (0 if opening else 1), err
    _says_how_to_answer(err, state, again)


@pytest.mark.parametrize("state", list(NEEDS))
@pytest.mark.parametrize("asked_by", ["task", "update"])
async def test_subscribe_turn_stops_at_the_end_of_the_turn(
    agent_url: Any, state: str, asked_by: str
) -> None:
    # The task waits already (its Task asks), or its turn ends while subscribed (an update).
    if asked_by == "task":
        first = [_task(state, QUESTION)]
    else:
        first = [_task("TASK_STATE_WORKING"), _status(state, QUESTION)]
    agent = OpenAgent(first, [_status("TASK_STATE_COMPLETED")])
    out, err = await _ends_the_turn(agent_url, agent, state, "subscribe", "t1", "--turn")
    assert QUESTION in out and "completed" not in out
    _says_how_to_answer(err, state, QUESTION)


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
            note = json.loads(await proc.stderr.readline())  # said while the stream stays open
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
    ended = note["turnEnded"]
    assert (ended["taskId"], ended["state"], ended["following"]) == (
        "t1",
        "TASK_STATE_INPUT_REQUIRED",
        True,
    )
    assert ended["answer"].endswith(" TEXT --task-id t1")


async def test_subscribe_says_it_follows_on_after_a_turn(agent_url: Any) -> None:
    agent = OpenAgent(
        [_task("TASK_STATE_WORKING"), _status("TASK_STATE_AUTH_REQUIRED", QUESTION)],
        [_status("TASK_STATE_COMPLETED", "done")],
    )
    url = await agent_url(agent)
    proc = await asyncio.create_subprocess_exec(
        PYTHON, "-m", "a2a_wire", "subscribe", url, "t1", "--timeout", "60",
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=environment(),
    )  # fmt: skip
    try:
        assert proc.stderr is not None
        async with asyncio.timeout(60):
            line = (await proc.stderr.readline()).decode()  # while the agent holds the stream
            agent.gate.set()
            await proc.communicate()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert line.startswith("the agent needs authentication; still following (Ctrl-C stops);")
    assert line.rstrip().endswith(" TEXT --task-id t1")
    assert proc.returncode == 0


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
