"""The ``delegate`` skill in process, against a scripted remote agent: every relay path."""

from __future__ import annotations

from typing import Any

import pytest
from server_support import ScriptedAgent, make_card, message, result

from a2a_wire.cli._skills import DelegateSkill, RemoteAgent
from a2a_wire.client import ClientSettings
from a2a_wire.server import create_app


@pytest.fixture(params=[True, False], ids=["streaming", "blocking"])
async def local(aiohttp_client: Any, aiohttp_server: Any, request: Any) -> Any:
    """The local server; the remote relays through streams, or blocking calls without them."""
    remote_card = make_card(streaming=request.param)
    remote = await aiohttp_server(create_app(remote_card, ScriptedAgent()))
    agent = RemoteAgent(
        "scripted", str(remote.make_url("")), settings=ClientSettings(allow=("127.0.0.1",))
    )
    return await aiohttp_client(create_app(make_card(), DelegateSkill({"scripted": agent})))


def _send(text: str, **fields: Any) -> dict[str, Any]:
    return {"message": message(text, **fields)}


async def test_remote_reply_becomes_the_local_reply(local: Any) -> None:
    answer = await result(local, "SendMessage", _send("reply"))
    assert answer["message"]["role"] == "ROLE_AGENT"
    assert answer["message"]["parts"][0]["text"].startswith("reply to ")
    assert "taskId" not in answer["message"]


async def test_input_required_and_follow_up_reach_the_same_remote_task(local: Any) -> None:
    first = (await result(local, "SendMessage", _send("input")))["task"]
    assert first["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert first["status"]["message"]["parts"][0]["text"] == "need more"
    second = (await result(local, "SendMessage", _send("more", taskId=first["id"])))["task"]
    assert second["id"] == first["id"]
    assert second["status"]["state"] == "TASK_STATE_COMPLETED"
    assert second["artifacts"][-1]["parts"] == [{"text": "got more"}]


@pytest.mark.parametrize(
    ("text", "state"),
    [("reject", "TASK_STATE_REJECTED"), ("raise", "TASK_STATE_FAILED")],
)
async def test_remote_end_states_are_relayed(local: Any, text: str, state: str) -> None:
    task = (await result(local, "SendMessage", _send(text)))["task"]
    assert task["status"]["state"] == state


async def test_unknown_agent_rejects(local: Any) -> None:
    task = (await result(local, "SendMessage", _send("hi", metadata={"agent": "nobody"})))["task"]
    assert task["status"]["state"] == "TASK_STATE_REJECTED"
    assert "'nobody'" in task["status"]["message"]["parts"][0]["text"]


def test_default_agent_must_be_registered() -> None:
    with pytest.raises(ValueError, match="not registered"):
        DelegateSkill({}, agent="ghost")
