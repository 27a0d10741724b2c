"""``send`` exits with what happened to the task (README "Exit codes"), against a scripted agent."""

from __future__ import annotations

from typing import Any

import pytest
from e2e_support import cli_async, fake_agent


def _task(state: str) -> dict[str, Any]:
    return {"task": {"id": "t1", "contextId": "c1", "status": {"state": state}}}


@pytest.mark.parametrize(
    ("state", "args", "code"),
    [
        ("TASK_STATE_COMPLETED", (), 0),
        ("TASK_STATE_INPUT_REQUIRED", (), 8),  # the agent needs input (end of its turn)
        ("TASK_STATE_AUTH_REQUIRED", (), 9),  # the agent needs authentication
        ("TASK_STATE_FAILED", (), 5),
        ("TASK_STATE_REJECTED", (), 5),
        ("TASK_STATE_SUBMITTED", (), 7),  # a blocking call came back before the task settled
        ("TASK_STATE_WORKING", (), 7),
        ("TASK_STATE_PAUSED_FOR_REVIEW", (), 7),  # a state this client does not know
        ("TASK_STATE_WORKING", ("--no-wait",), 0),  # what --no-wait asks for
        ("TASK_STATE_CANCELED", ("--no-wait",), 5),
    ],
)
async def test_send_exit_code_says_what_happened_to_the_task(
    aiohttp_server: Any, state: str, args: tuple[str, ...], code: int
) -> None:
    server = await aiohttp_server(fake_agent(lambda method, params: _task(state)))
    url = str(server.make_url("/"))
    returncode, out, err = await cli_async("send", url, "hi", *args)
    assert returncode == code, err
    assert state.removeprefix("TASK_STATE_").lower().replace("_", "-") in out


async def test_a_direct_message_reply_exits_0(aiohttp_server: Any) -> None:
    reply = {"message": {"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": "hello"}]}}
    server = await aiohttp_server(fake_agent(lambda method, params: reply))
    returncode, out, err = await cli_async("send", str(server.make_url("/")), "hi")
    assert (returncode, "hello" in out) == (0, True), err


async def test_the_address_guard_speaks_of_the_cli_options(aiohttp_server: Any) -> None:
    # The card sends the client on to another loopback address than the one typed.
    agent = fake_agent(
        lambda method, params: _task("TASK_STATE_COMPLETED"), "http://127.0.0.2:9/rpc"
    )
    server = await aiohttp_server(agent)
    returncode, _, err = await cli_async("send", str(server.make_url("/")), "hi")
    assert returncode == 3
    assert err.startswith("error: AddressNotAllowedError: ") and "127.0.0.2" in err, err
    assert "use --allow HOST (or --allow-private)" in err
    assert "ClientSettings" not in err
