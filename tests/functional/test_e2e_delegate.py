"""End to end: the ``delegate`` skill of one ``a2a-wire serve`` relaying to a second one.

The local server registers the remote one under ``[[agents]]`` (with an allowlist entry for
127.0.0.1 and a credential read from an environment variable). The tests check that the remote
task's status, artifact chunks and final state come back as the local task's events, that
cancelling the local task cancels the remote one, and that an unreachable agent fails the task.
The remote task to cancel is held by a gate that is never opened (``e2e_support:GatedEcho``),
so it is still running whenever the cancel arrives.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from e2e_support import ServerProcess, cli, environment, free_port, json_lines, write_config

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]

REMOTE = """
[server]
port = {port}
storage = "memory"

[card]
name = "remote"

[[skills]]
executor = "echo"
default = true
options = {{ chunk_size = 3, chunk_delay_seconds = 0.1 }}

[[skills]]
id = "held"
executor = "e2e_support:GatedEcho"
options = {{ gate = "{gate}" }}
"""

LOCAL = """
[server]
port = {port}
data_dir = "{data}"

[[skills]]
executor = "echo"
default = true

[[skills]]
executor = "delegate"
options = {{ agent = "remote" }}

[[agents]]
name = "remote"
url = "http://127.0.0.1:{remote}"
token_env = "REMOTE_TOKEN"
allow = ["127.0.0.1"]

[[agents]]
name = "down"
url = "http://127.0.0.1:{down}"
allow = ["127.0.0.1"]
"""


@pytest.fixture
def servers(tmp_path: Path) -> Any:
    remote_port, local_port = free_port(), free_port()
    remote_config = write_config(
        tmp_path / "remote.toml", REMOTE, port=remote_port, gate=tmp_path / "never-opened"
    )
    local_config = write_config(
        tmp_path / "local.toml",
        LOCAL,
        port=local_port,
        data=tmp_path / "data",
        remote=remote_port,
        down=free_port(),
    )
    remote = ServerProcess(["--config", str(remote_config)], tmp_path / "remote.log", remote_port)
    local = ServerProcess(
        ["--config", str(local_config)],
        tmp_path / "local.log",
        local_port,
        env=environment(REMOTE_TOKEN="remote-secret"),
    )
    try:
        yield remote.start(), local.start()
    finally:
        local.close()
        remote.close()


def test_delegate_relays_the_remote_task(servers: tuple[ServerProcess, ServerProcess]) -> None:
    remote, local = servers
    result = cli("send", local.url, "hello remote", "--skill", "delegate", "--stream", "--json")
    assert result.returncode == 0, result.stderr
    events = json_lines(result.stdout)
    assert "task" in events[0]
    handed = events[1]["statusUpdate"]
    assert handed["status"]["state"] == "TASK_STATE_WORKING"
    info = handed["metadata"]["delegate"]
    assert info["agent"] == "remote"
    chunks = [e["artifactUpdate"] for e in events if "artifactUpdate" in e]
    assert len(chunks) == 4  # "hello remote" in chunks of 3, relayed one by one
    assert [c.get("append", False) for c in chunks] == [False, True, True, True]
    assert chunks[-1]["lastChunk"] is True
    assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"

    local_task = json_lines(cli("get", local.url, events[0]["task"]["id"], "--json").stdout)[0]
    remote_task = json_lines(cli("get", remote.url, info["remoteTaskId"], "--json").stdout)[0]
    assert remote_task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert local_task["artifacts"] == remote_task["artifacts"]
    text = "".join(p["text"] for p in local_task["artifacts"][0]["parts"])
    assert text == "hello remote"
    assert "remote-secret" not in local.log()


def _remote_working(remote: ServerProcess, timeout: float = 60.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        page = json_lines(cli("list", remote.url, "--status", "working", "--json").stdout)[0]
        if page.get("tasks"):
            return str(page["tasks"][0]["id"])
        time.sleep(0.1)
    raise AssertionError("the remote agent never started a task")


def test_cancel_reaches_the_remote_task(servers: tuple[ServerProcess, ServerProcess]) -> None:
    remote, local = servers
    held = '{"remoteSkillId": "held"}'  # the remote task waits at its gate until canceled
    sent = cli(
        "send",
        local.url,
        "x" * 90,
        "--skill",
        "delegate",
        "--metadata",
        held,
        "--no-wait",
        "--json",
    )
    local_id = json_lines(sent.stdout)[0]["task"]["id"]
    remote_id = _remote_working(remote)
    canceled = cli("cancel", local.url, local_id)
    assert canceled.returncode == 0, canceled.stderr
    assert "canceled" in canceled.stdout
    assert "remote agent 'remote' reports its task as TASK_STATE_CANCELED" in canceled.stdout
    remote_task = json_lines(cli("get", remote.url, remote_id, "--json").stdout)[0]
    assert remote_task["status"]["state"] == "TASK_STATE_CANCELED"


def test_unreachable_agent_fails_the_task(servers: tuple[ServerProcess, ServerProcess]) -> None:
    _, local = servers
    result = cli("send", local.url, "hi", "--skill", "delegate", "--metadata", '{"agent": "down"}')
    assert result.returncode == 5
    assert "failed" in result.stdout
    assert "Remote agent 'down' could not be reached: ConnectError" in result.stdout
    unknown = cli("send", local.url, "hi", "--skill", "delegate", "--metadata", '{"agent": "?"}')
    assert unknown.returncode == 5 and "rejected" in unknown.stdout
