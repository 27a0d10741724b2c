"""``a2a-wire serve --workers N``: refused off PostgreSQL; the supervisor restarts, drains, stops.

The supervisor's mechanics run through ``tests/supervisor_main.py`` on memory storage (the
command refuses that storage, rightly: each worker keeps its own tasks, which these tests never
read across workers). Real processes on 127.0.0.1; every wait polls the log for a line or a
process for its end, with a generous deadline, never a time; every process is stopped by its
handle or its id (:meth:`Supervised.close`).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from e2e_support import (
    PYTHON,
    ServerProcess,
    cli,
    environment,
    free_port,
    json_lines,
    write_config,
)
from supervisor_main import STABLE_SECONDS_VARIABLE

from a2a_wire.cli._worker_slots import (
    RESTART_BASE_SECONDS,
    RESTART_CAP_SECONDS,
    restart_delay,
)

pytestmark = pytest.mark.slow

MEMORY = """
[server]
port = {port}
storage = "memory"
shutdown_grace_seconds = {grace}
{skills}
"""

STUBBORN = """
[[skills]]
id = "stubborn"
executor = "e2e_support:StubbornAgent"
[skills.options]
marker = "{marker}"
"""

REFUSED = """
[[skills]]
id = "refused"
executor = "supervisor_main:refused_in_workers"
"""

POSTGRESQL = """
[server]
port = {port}
storage = "postgresql"
data_dir = "{data}"

[postgresql]
dsn_env = "TEST_TASKS_DSN"
schema = "{schema}"
"""

STARTED = re.compile(r"worker started .*worker=(\d+) pid=(\d+)")


def _wait_for(condition: Callable[[], object], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def _gone(pid: int) -> bool:
    """The process has ended (a zombie waiting for its reaper counts as ended)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        status = Path(f"/proc/{pid}/status").read_text(encoding="utf-8")
    except OSError:
        return False
    return "\nState:\tZ" in status


class Supervised:
    """The supervisor of ``supervisor_main`` in a subprocess, its stderr in a file."""

    def __init__(self, tmp_path: Path, workers: int, *, grace: float = 10.0, skills: str = ""):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.workers = workers
        self.log_path = tmp_path / "supervisor.log"
        text = MEMORY.format(port=self.port, grace=grace, skills=skills)
        self.config = write_config(tmp_path / "serve.toml", text)
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> Supervised:
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                [PYTHON, "-m", "supervisor_main", str(self.config), str(self.workers)],
                stdout=subprocess.DEVNULL,
                stderr=log,
                stdin=subprocess.DEVNULL,
                # Restarts count as fast failures however long a busy machine kept a worker up.
                env={**environment(), STABLE_SECONDS_VARIABLE: "3600"},
            )
        return self

    def serving(self) -> Supervised:
        """Wait for the one ``listening`` line, logged once every worker is ready."""
        _wait_for(lambda: " listening " in self.log() or self.proc.poll() is not None, "start")
        assert f"workers={self.workers}" in self.log(), self.log()
        return self

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def pids(self) -> dict[int, int]:
        """The latest pid of each worker slot, from the ``worker started`` lines."""
        return {int(slot): int(pid) for slot, pid in STARTED.findall(self.log())}

    def every_pid(self) -> set[int]:
        return {int(pid) for _, pid in STARTED.findall(self.log())}

    def close(self) -> None:
        """Kill the supervisor if it runs, then any worker it started that is still alive."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)
        for pid in self.every_pid():
            if not _gone(pid):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("storage", ["sqlite", "memory"])
def test_more_than_one_worker_is_refused_without_postgresql(tmp_path: Path, storage: str) -> None:
    data = tmp_path / "data"
    config = write_config(
        tmp_path / "serve.toml",
        '[server]\nport = {port}\nstorage = "{storage}"\ndata_dir = "{data}"\n',
        port=free_port(),
        storage=storage,
        data=data,
    )
    for extra in ([], ["--check"]):
        result = cli("serve", "--config", str(config), "--workers", "3", *extra)
        assert result.returncode == 6, result.stderr
        assert '--workers 3 needs storage = "postgresql"' in result.stderr
        assert f'storage = "{storage}"' in result.stderr
        assert "listening" not in result.stderr
    assert not data.exists()  # refused before anything started
    assert cli("serve", "--config", str(config), "--workers", "1", "--check").returncode == 0
    assert cli("serve", "--config", str(config), "--workers", "0").returncode == 2


def test_the_restart_delay_doubles_up_to_its_cap() -> None:
    assert restart_delay(0) == 0.0
    assert restart_delay(1) == RESTART_BASE_SECONDS
    assert restart_delay(2) == 2 * RESTART_BASE_SECONDS
    assert restart_delay(3) == 4 * RESTART_BASE_SECONDS
    assert restart_delay(1000) == RESTART_CAP_SECONDS


def _answers(url: str) -> None:
    sent = cli("send", url, "hello", "--json")
    assert sent.returncode == 0, sent.stderr
    assert "TASK_STATE_COMPLETED" in json_lines(sent.stdout)[-1]["task"]["status"]["state"]


def test_each_request_line_names_the_worker_that_answered(tmp_path: Path) -> None:
    supervised = Supervised(tmp_path, 2).start()
    try:
        supervised.serving()
        pids = supervised.pids()
        for _ in range(4):
            _answers(supervised.url)
        log = supervised.log()
        for slot, pid in pids.items():
            assert f"worker ready logger=a2a_wire.serve worker={slot} pid={pid}" in log
        requests = [line for line in log.splitlines() if " info request " in line]
        assert len(requests) >= 4, log
        assert all(re.search(r" worker=[12]$", line) for line in requests), requests
    finally:
        supervised.close()


def test_a_killed_worker_is_restarted_and_sigterm_drains_them_all(tmp_path: Path) -> None:
    supervised = Supervised(tmp_path, 2).start()
    try:
        supervised.serving()
        first = supervised.pids()
        assert sorted(first) == [1, 2] and len(set(first.values())) == 2
        os.kill(first[1], signal.SIGKILL)
        _wait_for(lambda: supervised.pids()[1] != first[1], "worker 1 to be started again")
        log = supervised.log()
        assert f"worker exited logger=a2a_wire.serve.workers worker=1 pid={first[1]}" in log
        assert "status=SIGKILL" in log
        assert "worker restarting logger=a2a_wire.serve.workers worker=1 in_seconds=" in log
        second = supervised.pids()[1]
        ready = f"worker ready logger=a2a_wire.serve worker=1 pid={second}"
        _wait_for(lambda: ready in supervised.log(), "the new worker 1 to be ready")
        for _ in range(4):  # whichever worker takes each connection, it answers
            _answers(supervised.url)
        os.kill(second, signal.SIGKILL)  # again, before it served long: the wait doubles
        _wait_for(lambda: supervised.pids()[1] != second, "worker 1 to be started a third time")
        delays = re.findall(r"worker=1 in_seconds=([\d.]+)", supervised.log())
        assert [float(d) for d in delays] == [RESTART_BASE_SECONDS, 2 * RESTART_BASE_SECONDS]
        last = supervised.pids()
        ready = f"worker ready logger=a2a_wire.serve worker=1 pid={last[1]}"
        _wait_for(lambda: ready in supervised.log(), "the third worker 1 to be ready")
        assert supervised.proc is not None
        supervised.proc.send_signal(signal.SIGTERM)
        assert supervised.proc.wait(timeout=60) == 0
        log = supervised.log()
        for slot, pid in last.items():
            assert f"worker={slot} pid={pid} status=0" in log
        assert log.count("reason=supervisor ") == 2 and log.rstrip().endswith(
            "info stopped logger=a2a_wire.serve.workers"
        )
        assert all(_gone(pid) for pid in supervised.every_pid())
    finally:
        supervised.close()


def test_a_second_signal_kills_the_workers_at_once(tmp_path: Path) -> None:
    marker = tmp_path / "started"
    # The grace period is far longer than the test's patience: only exiting at once passes.
    skills = STUBBORN.format(marker=marker)
    supervised = Supervised(tmp_path, 2, grace=3600, skills=skills).start()
    try:
        supervised.serving()
        sent = cli("send", supervised.url, "hold on", "--no-wait", "--json")
        assert sent.returncode == 0, sent.stderr
        _wait_for(marker.exists, "the agent to start")
        assert supervised.proc is not None
        supervised.proc.send_signal(signal.SIGTERM)
        _wait_for(lambda: "stopping logger=a2a_wire.serve.workers" in supervised.log(), "stop")
        supervised.proc.send_signal(signal.SIGTERM)
        assert supervised.proc.wait(timeout=60) == 128 + signal.SIGTERM
        assert "second signal: killing the workers" in supervised.log()
        assert all(_gone(pid) for pid in supervised.every_pid())  # killed and reaped
    finally:
        supervised.close()


def test_workers_stop_when_the_supervisor_dies(tmp_path: Path) -> None:
    supervised = Supervised(tmp_path, 2).start()
    try:
        supervised.serving()
        workers = supervised.pids().values()
        assert supervised.proc is not None
        supervised.proc.kill()
        supervised.proc.wait(timeout=30)
        _wait_for(lambda: all(_gone(pid) for pid in workers), "the orphaned workers to stop")
        assert (
            supervised.log().count('stopping logger=a2a_wire.serve reason="supervisor gone"') == 2
        )
    finally:
        supervised.close()


def test_a_worker_that_fails_to_start_fails_the_start(tmp_path: Path) -> None:
    supervised = Supervised(tmp_path, 2, skills=REFUSED).start()
    try:
        assert supervised.proc is not None
        assert supervised.proc.wait(timeout=60) == 1
        log = supervised.log()
        assert "this executor refuses to run in a worker" in log  # the worker said why
        assert re.search(r"error: cannot start: worker \d exited \(6\) before it was ready", log)
        assert " listening " not in log
        assert len(supervised.every_pid()) == 2
        assert all(_gone(pid) for pid in supervised.every_pid())
    finally:
        supervised.close()


async def test_two_workers_serve_one_postgresql_schema(
    tmp_path: Path, postgres_dsn: str, postgres_schema: str
) -> None:
    port = free_port()
    text = POSTGRESQL.format(port=port, data=tmp_path / "data", schema=postgres_schema)
    config = write_config(tmp_path / "serve.toml", text)
    env = environment(TEST_TASKS_DSN=postgres_dsn)
    args = ["--config", str(config), "--workers", "2"]
    server = ServerProcess(args, tmp_path / "server.log", port, env=env)
    try:
        server.start(timeout=60)
        assert "workers=2" in server.log()
        sent = cli("send", server.url, "hello", "--json", env=env)
        assert sent.returncode == 0, sent.stderr
        task_id = json_lines(sent.stdout)[-1]["task"]["id"]
        for _ in range(6):  # whichever worker answers, it reads the one schema
            got = cli("get", server.url, task_id, "--json", env=env)
            assert got.returncode == 0, got.stderr
            assert json_lines(got.stdout)[0]["status"]["state"] == "TASK_STATE_COMPLETED"
        assert server.stop(signal.SIGTERM, timeout=60) == 0
    finally:
        server.close()
