"""``a2a-wire serve`` stops even when an agent ignores cancellation (issue 15).

The agent (:class:`e2e_support.StubbornAgent`) never returns and swallows every cancellation;
the tests wait for the file it writes once its task is WORKING, never for a time.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest
from e2e_support import ServerProcess, cli, free_port, json_lines, write_config

STUBBORN = """
[server]
port = {port}
data_dir = "{data}"
shutdown_grace_seconds = {grace}

[[skills]]
id = "stubborn"
executor = "e2e_support:StubbornAgent"
[skills.options]
marker = "{marker}"
"""


def _wait_for(condition: object, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if callable(condition) and condition():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def _serving_a_stubborn_task(tmp_path: Path, grace: float) -> tuple[ServerProcess, str]:
    """A server whose one task is WORKING in an agent that ignores cancellation."""
    port = free_port()
    marker = tmp_path / "started"
    config = write_config(
        tmp_path / "serve.toml",
        STUBBORN,
        port=port,
        data=tmp_path / "data",
        grace=grace,
        marker=marker,
    )
    server = ServerProcess(["--config", str(config)], tmp_path / "server.log", port).start()
    sent = cli("send", server.url, "hold on", "--no-wait", "--json")
    assert sent.returncode == 0, sent.stderr
    _wait_for(marker.exists, "the agent to start")
    return server, marker.read_text(encoding="utf-8")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_second_signal_exits_at_once(tmp_path: Path, signum: signal.Signals) -> None:
    # The grace period is far longer than the test's patience: only exiting at once passes.
    server, task_id = _serving_a_stubborn_task(tmp_path, grace=3600)
    try:
        assert server.proc is not None
        server.proc.send_signal(signum)
        _wait_for(lambda: " stopping " in server.log(), "the first signal to be taken")
        assert server.stop(signum, timeout=60) == 128 + signum
        log = server.log()
        assert "second signal: exiting now" in log
        assert "not open" not in log and "Traceback" not in log
        server.start()  # the next start fails the task the stopped process left running
        got = json_lines(cli("get", server.url, task_id, "--json").stdout)[0]
        assert got["status"]["state"] == "TASK_STATE_FAILED"
    finally:
        server.close()


def test_a_first_signal_does_not_wait_on_an_agent_that_ignores_cancellation(
    tmp_path: Path,
) -> None:
    server, _ = _serving_a_stubborn_task(tmp_path, grace=0.1)
    try:
        assert server.stop(signal.SIGTERM, timeout=60) == 0
        log = server.log()
        assert "exiting without the agent runs that ignored cancellation" in log
        assert "not open" not in log and "Traceback" not in log
    finally:
        server.close()
