"""End to end: ``a2a-wire serve`` as a process, driven only through the ``a2a-wire`` commands.

One server (SQLite in a temporary data directory, a free port) takes the whole tour: card, send
(blocking, streamed, with data and file parts), get, list, subscribe, cancel, the push commands
with a local ``a2a-wire webhook``, and the error exit codes. It is stopped with SIGTERM while a
short request and a long stream are running (the first finishes, the second gets a final error
event), and a restart on the same directory shows the data survived.

A task that must still be running when the test acts (to follow it, cancel it, or stop the
server under it) runs ``e2e_support:GatedEcho``, held at a gate file that the test creates when
it wants the task to go on; no test races the clock.
"""

from __future__ import annotations

import base64
import json
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from e2e_support import (
    SCRIPT,
    ServerProcess,
    cli,
    cli_start,
    environment,
    finish,
    free_port,
    json_lines,
    write_config,
)

from a2a_wire.server.store import RESTART_MESSAGE

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]

CONFIG = """
[server]
host = "127.0.0.1"
port = {port}
data_dir = "{data}"
shutdown_grace_seconds = {grace}

[card]
name = "e2e agent"

[push]
allow_http = true
allow = ["127.0.0.1"]
backoff_base_seconds = 0.1

[[skills]]
executor = "echo"
default = true
options = {{ chunk_size = 4, chunk_delay_seconds = 0.01 }}

[[skills]]
id = "held"
executor = "e2e_support:GatedEcho"
name = "Held echo"
options = {{ gate = "{gates}/held", chunk_size = 4 }}

[[skills]]
id = "pushed"
executor = "e2e_support:GatedEcho"
name = "Echo held until pushed, then until canceled"
options = {{ first_gate = "{gates}/pushed", gate = "{gates}/never-opened" }}

[[skills]]
id = "stuck"
executor = "e2e_support:GatedEcho"
name = "Echo held until canceled"
options = {{ gate = "{gates}/never-opened" }}
"""

#: Long enough for a released task to finish on a busy machine; the SIGTERM test waits it out.
GRACE = 5.0


@pytest.fixture
def server(tmp_path: Path) -> Any:
    port = free_port()
    gates = tmp_path / "gates"
    gates.mkdir()
    config = write_config(
        tmp_path / "e2e.toml", CONFIG, port=port, data=tmp_path / "data", gates=gates, grace=GRACE
    )
    proc = ServerProcess(["--config", str(config)], tmp_path / "server.log", port)
    try:
        yield proc.start()
    finally:
        proc.close()


def _task(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert result.returncode == 0, result.stderr
    lines = json_lines(result.stdout)
    assert len(lines) == 1
    return lines[0]["task"] if "task" in lines[0] else lines[0]


def _until(condition: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    """Poll ``condition`` (a generous deadline: the machine may be busy)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def test_card_send_get_list(server: ServerProcess, tmp_path: Path) -> None:
    url = server.url
    shown = subprocess.run(
        [str(SCRIPT), "card", url], capture_output=True, text=True, timeout=30, check=False
    )
    assert shown.returncode == 0, shown.stderr
    assert "e2e agent" in shown.stdout and "Held echo" in shown.stdout
    assert "streaming      yes" in shown.stdout
    card = json_lines(cli("card", url, "--json").stdout)[0]
    assert card["capabilities"] == {"streaming": True, "pushNotifications": True}
    assert card["supportedInterfaces"][0]["url"] == url + "/"

    streamed = cli("send", url, "hello world", "--stream")
    assert streamed.returncode == 0, streamed.stderr
    lines = streamed.stdout.splitlines()
    assert lines[0].startswith("task ") and lines[0].endswith("submitted")
    assert lines[1].startswith("working") and "Echoing 11 characters" in lines[1]
    assert lines[2] == "artifact  echo = hell"
    assert lines[3] == "artifact  echo += o wo"
    assert "completed" in lines[5]
    assert lines[-1] == "hello world"  # the chunks, assembled

    events = json_lines(cli("send", url, "hello", "--stream", "--json").stdout)
    assert [next(iter(e)) for e in events] == [
        "task",
        "statusUpdate",
        "artifactUpdate",
        "artifactUpdate",
        "statusUpdate",
    ]
    assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    first_id = events[0]["task"]["id"]

    note = tmp_path / "note.txt"
    note.write_bytes(b"file body\n")
    task = _task(cli("send", url, "hi", "--data", '{"k": [1, 2]}', "--file", str(note), "--json"))
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    echo, attachments = task["artifacts"]
    assert echo["parts"] == [{"text": "hi"}]
    data, file = attachments["parts"]
    assert data == {"data": {"k": [1, 2]}}
    assert base64.b64decode(file["raw"]) == b"file body\n"
    assert file["filename"] == "note.txt" and file["mediaType"] == "text/plain"

    blocking = cli("send", url, "plain")
    assert blocking.returncode == 0
    assert "completed" in blocking.stdout and blocking.stdout.rstrip().endswith("plain")

    got = _task(cli("get", url, first_id, "--history", "1", "--json"))
    assert got["id"] == first_id and len(got["history"]) == 1
    human = cli("get", url, first_id)
    assert first_id in human.stdout and "completed" in human.stdout

    page = json_lines(cli("list", url, "--json").stdout)[0]
    assert page["totalSize"] == 4 and page["tasks"][-1]["id"] != ""
    listed = cli("list", url, "--status", "completed", "--page-size", "2")
    assert listed.returncode == 0 and "2 of 4 tasks; next page: --page-token" in listed.stdout


def test_subscribe_cancel_and_errors(server: ServerProcess) -> None:
    url = server.url
    # Held at its gate (never opened here): it runs until the cancel, whatever the timing.
    task = _task(cli("send", url, "abcdefghijklmnop", "--skill", "held", "--no-wait", "--json"))
    task_id = task["id"]
    assert task["status"]["state"] in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING")
    follower = cli_start("subscribe", url, task_id, "--json")
    try:
        assert follower.stdout is not None
        first = json.loads(follower.stdout.readline())  # subscribed: the task snapshot came
        assert first["task"]["id"] == task_id
        canceled = cli("cancel", url, task_id, "--json")
        assert _task(canceled)["status"]["state"] == "TASK_STATE_CANCELED"
        out, err = follower.communicate(timeout=15)
    finally:
        finish(follower, signal.SIGKILL)
    assert follower.returncode == 5, err  # the task it followed was canceled
    events = json_lines(out)
    assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_CANCELED"

    again = cli("cancel", url, task_id)
    assert again.returncode == 4
    assert "error: TaskNotCancelableError (-32002)" in again.stderr
    missing = cli("get", url, "no-such-task", "--json")
    assert missing.returncode == 4
    error = json.loads(missing.stderr)["error"]
    assert error["name"] == "TaskNotFoundError" and error["code"] == -32001
    assert error["data"][0]["reason"] == "TASK_NOT_FOUND"
    refused = cli("send", url, "x", "--skill", "nope")
    assert refused.returncode == 4 and "InvalidParamsError (-32602)" in refused.stderr
    down = cli("send", f"http://127.0.0.1:{free_port()}", "x")
    assert down.returncode == 3 and "ConnectError" in down.stderr
    usage = cli("send", url, "x", "--stream", "--no-wait")
    assert usage.returncode == 2
    bad_data = cli("send", url, "x", "--data", "{nope")
    assert bad_data.returncode == 2 and "not JSON" in bad_data.stderr


def test_push_with_local_webhook(server: ServerProcess, tmp_path: Path) -> None:
    url = server.url
    port = free_port()
    hook = f"http://127.0.0.1:{port}/webhook"
    receiver = cli_start("webhook", "--port", str(port), "--notification-token", "n-tok", "--json")
    received: queue.Queue[str] = queue.Queue()
    try:
        assert receiver.stderr is not None and receiver.stdout is not None
        assert "listening on" in receiver.stderr.readline()
        reader = threading.Thread(target=lambda: [received.put(x) for x in receiver.stdout or ()])
        reader.daemon = True
        reader.start()
        # Held before its first chunk until the config exists, and after it until the cancel.
        sent = cli("send", url, "a" * 400, "--skill", "pushed", "--no-wait", "--json")
        task_id = _task(sent)["id"]
        made = cli("push", "set", url, task_id, hook, "--notification-token", "n-tok", "--json")
        config = _task(made)
        assert config["taskId"] == task_id and config["url"] == hook and config["id"]
        got = _task(cli("push", "get", url, task_id, config["id"], "--json"))
        assert got["id"] == config["id"]
        listed = json_lines(cli("push", "list", url, task_id, "--json").stdout)[0]
        assert [c["id"] for c in listed["configs"]] == [config["id"]]
        (tmp_path / "gates" / "pushed").touch()  # the first chunk goes now, pushed to the hook
        events = _events_until(received, lambda e: "artifactUpdate" in e)
        canceled = cli("cancel", url, task_id)
        assert canceled.returncode == 0, (canceled.stdout, canceled.stderr)
        events += _events_until(received, lambda e: _state(e) == "TASK_STATE_CANCELED")
        assert all(_event_task(e) == task_id for e in events)
        deleted = cli("push", "delete", url, task_id, config["id"])
        assert deleted.returncode == 0 and "deleted" in deleted.stdout
        empty = json_lines(cli("push", "list", url, task_id, "--json").stdout)[0]
        assert not empty.get("configs")
        assert finish(receiver, signal.SIGTERM) == 0
        reader.join(timeout=5)
    finally:
        finish(receiver, signal.SIGKILL)


def _state(event: dict[str, Any]) -> str:
    return str(event.get("statusUpdate", {}).get("status", {}).get("state", ""))


def _events_until(
    received: queue.Queue[str], wanted: Callable[[dict[str, Any]], bool]
) -> list[dict[str, Any]]:
    """Events the webhook printed, up to the first one ``wanted`` accepts."""
    events: list[dict[str, Any]] = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            event = json.loads(received.get(timeout=0.2))
        except queue.Empty:
            continue
        events.append(event)
        if wanted(event):
            return events
    raise AssertionError(f"the awaited event never reached the webhook: {events}")


def _event_task(event: dict[str, Any]) -> str:
    member = next(iter(event.values()))
    return str(member.get("taskId") or member.get("id"))


def test_sigterm_drains_then_data_survives_restart(server: ServerProcess, tmp_path: Path) -> None:
    url = server.url
    done = _task(cli("send", url, "keep me", "--json"))
    short = cli_start("send", url, "abcdef", "--skill", "held", "--stream", "--json")
    long = cli_start("send", url, "x" * 40, "--skill", "stuck", "--stream", "--json")
    ids = []
    try:
        for running in (short, long):  # both are held after their first chunk
            assert running.stdout is not None
            ids.append(json.loads(running.stdout.readline())["task"]["id"])
            assert "statusUpdate" in json.loads(running.stdout.readline())
            assert "artifactUpdate" in json.loads(running.stdout.readline())
        assert server.proc is not None
        server.proc.send_signal(signal.SIGTERM)
        _until(lambda: " stopping " in server.log(), "the server to take the signal")
        (tmp_path / "gates" / "held").touch()  # the short one may finish now, in the grace period
        # The long one never finishes by itself: the stop ends only because the grace runs out
        # (the wait is far longer than that).
        assert server.proc.wait(timeout=GRACE + 60) == 0
        short_out, _ = short.communicate(timeout=30)
        long_out, long_err = long.communicate(timeout=30)
    finally:
        finish(short, signal.SIGKILL)
        finish(long, signal.SIGKILL)
    assert short.returncode == 0  # it finished within the grace period
    final = json_lines(short_out)[-1]
    assert final["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert long.returncode == 7  # its stream ended by the server's stop: the task unfinished
    assert "The server is stopping with this task unfinished" in long_err
    assert "FAILED when the server starts again" in long_err  # a one-process store
    assert json.loads(long_err.splitlines()[-1])["error"]["taskId"] == ids[1]
    log = server.log()
    assert "stopping" in log and "stopped" in log
    # The grace period ran out with only the long run and its stream left: the short one was done.
    [over] = [line for line in log.splitlines() if "grace period over" in line]
    assert "requests=1" in over and "runs=1" in over, over
    requests = [line for line in log.splitlines() if " request " in line]
    assert any("method=SendMessage" in r and f"task_id={done['id']}" in r for r in requests)
    assert all("status=" in r and "duration_ms=" in r for r in requests)

    server.start()
    again = _task(cli("get", url, done["id"], "--json"))
    assert again["status"]["state"] == "TASK_STATE_COMPLETED"
    assert "".join(p["text"] for p in again["artifacts"][0]["parts"]) == "keep me"
    page = json_lines(cli("list", url, "--json").stdout)[0]
    assert page["totalSize"] == 3
    states = {t["status"]["state"] for t in page["tasks"]}
    assert states == {"TASK_STATE_COMPLETED", "TASK_STATE_FAILED"}
    failed = next(t for t in page["tasks"] if t["status"]["state"] == "TASK_STATE_FAILED")
    assert failed["status"]["message"]["parts"][0]["text"] == RESTART_MESSAGE


AUTH = """
[server]
port = {port}
storage = "memory"

[[skills]]
executor = "echo"

[[clients]]
id = "alice"
token_env = "ALICE_TOKEN"
"""


def test_credentials_from_flag_environment_and_file(tmp_path: Path) -> None:
    port = free_port()
    config = write_config(tmp_path / "auth.toml", AUTH, port=port)
    secret = "alice-secret-token"
    env = environment(ALICE_TOKEN=secret)
    proc = ServerProcess(["--config", str(config)], tmp_path / "auth.log", port, env=env)
    token_file = tmp_path / "token"
    token_file.write_text(secret + "\n")
    try:
        url = proc.start().url
        assert cli("card", url).returncode == 0  # the public card needs no credential
        anonymous = cli("list", url)
        assert anonymous.returncode == 4 and "AuthenticationError" in anonymous.stderr
        assert cli("send", url, "hi", "--token", secret).returncode == 0
        assert cli("list", url, env=environment(A2A_WIRE_TOKEN=secret)).returncode == 0
        assert cli("list", url, "--token-file", str(token_file)).returncode == 0
        assert cli("list", url, "--token-env", "MINE", env=environment(MINE=secret)).returncode == 0
        wrong = cli("list", url, "--token", "not-it")
        assert wrong.returncode == 4 and "not-it" not in wrong.stderr
        unset = cli("list", url, "--token-env", "NOT_SET_ANYWHERE")
        assert unset.returncode == 2 and "NOT_SET_ANYWHERE is not set" in unset.stderr
    finally:
        proc.close()
    assert secret not in proc.log()
