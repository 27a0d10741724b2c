"""The README's tour ("A one-minute tour"), run as a reader would, against any installation.

The commands are read from the README itself: the first ``send`` the tour shows, then every line
of its "Then try:" block, in order, with a server of the installation under test.
"""

from __future__ import annotations

import re
import signal
import subprocess
from pathlib import Path

from e2e_support import ServerProcess, environment, finish, free_port, write_config

ROOT = Path(__file__).resolve().parents[1]
URL = "http://127.0.0.1:8765"


def _readme_tour() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    return readme.split("## A one-minute tour", 1)[1].split("\n## ", 1)[0]


def first_send() -> tuple[str, list[str]]:
    """The command line the tour runs first ("In another terminal"), and what it shows it print."""
    console = _readme_tour().split("```console\n")[2].split("```", 1)[0]
    command, *shown = console.splitlines()
    assert command.startswith("$ "), command
    return command[2:], shown


_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _as_shown(lines: list[str]) -> list[str]:
    """Lines as compared with the README: ids masked, trailing blanks dropped."""
    return [_UUID.sub("<id>", line).rstrip() for line in lines]


def tour_lines() -> list[str]:
    """The command lines of the README's "Then try:" block."""
    block = _readme_tour().split("Then try:", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    return block.splitlines()


#: The embedded default, but the echo waits at a gate after its first chunk while the file
#: ``gate`` is missing: the task the tour follows and cancels runs until then, whatever the
#: timing (the real echo of long.txt takes a minute, which a reader has, but a test must not
#: count on).
TOUR = """
[server]
port = {port}
data_dir = "{data}"

[[skills]]
id = "echo"
name = "Echo"
executor = "e2e_support:GatedEcho"
default = true
options = {{ gate = "{gate}" }}

[[skills]]
executor = "delegate"
"""


def _bash(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", command],
        cwd=cwd,  # a fresh folder: the tour makes the files it uses
        capture_output=True,
        text=True,
        timeout=60,
        env=environment(),
        stdin=subprocess.DEVNULL,
    )


def _as_in_a_terminal() -> None:
    """SIGINT as a terminal's foreground job has it: a test run started as a background job of
    a shell inherits SIGINT ignored (POSIX shells ignore it for their background jobs), and a
    command that inherits it ignored rightly keeps ignoring Ctrl-C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _follow_then_interrupt(command: str, cwd: Path) -> tuple[int, str]:
    """Run ``subscribe`` until it shows the task, then press Ctrl-C (SIGINT) as a reader would."""
    proc = subprocess.Popen(
        ["bash", "-c", command],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environment(),
        stdin=subprocess.DEVNULL,
        preexec_fn=_as_in_a_terminal,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
    finally:
        finish(proc, signal.SIGKILL)
    return proc.returncode, first


def run_tour(tmp_path: Path, python: str) -> None:
    """Run the README's tour with the ``a2a-wire`` beside ``python``, against its own server.

    Args:
        tmp_path: A fresh folder: the tour's files, the server's data and log.
        python: The interpreter of the installation under test (its venv's ``bin/python``).
    """
    script = Path(python).parent / "a2a-wire"
    lines = tour_lines()
    assert lines[0] == "A=.venv/bin/a2a-wire; URL=http://127.0.0.1:8765"
    send, shown = first_send()
    assert send.startswith(".venv/bin/a2a-wire send http://127.0.0.1:8765 "), send
    port = free_port()
    gate = tmp_path / "gate"
    gate.touch()  # open: every echo runs through
    config = write_config(
        tmp_path / "tour.toml", TOUR, port=port, data=tmp_path / "data", gate=gate
    )
    log = tmp_path / "server.log"
    with ServerProcess(["--config", str(config)], log, port, python=python) as server:
        first = send.replace(".venv/bin/a2a-wire", str(script)).replace(URL, server.url)
        run = _bash(first, tmp_path)
        assert run.returncode == 0, (first, run.stderr)
        assert _as_shown(run.stdout.splitlines()) == _as_shown(shown)
        prelude = f"A={script}; URL={server.url}\n"
        task_id = "TASK_ID"
        for line in lines[1:]:
            verb = line.split()[1]
            line = line.replace("TASK_ID", task_id)
            if "--no-wait" in line:
                gate.unlink()  # the task it starts runs until the cancel below
            if verb == "subscribe":  # exec: Ctrl-C reaches a2a-wire itself, not bash
                code, first = _follow_then_interrupt(prelude + "exec " + line, tmp_path)
                assert first.startswith(f"task      {task_id}") and "working" in first, first
                assert code == 130  # interrupted; the task goes on
                continue
            run = _bash(prelude + line, tmp_path)
            assert run.returncode == 0, (line, run.stderr)
            if "--no-wait" in line:
                found = re.search(r"^task\s+(\S+)", run.stdout, flags=re.MULTILINE)
                assert found is not None, run.stdout
                task_id = found.group(1)
            if verb == "get":
                assert re.search(r"^state\s+working", run.stdout, flags=re.MULTILINE), run.stdout
            if verb == "cancel":
                assert re.search(r"^state\s+canceled", run.stdout, flags=re.MULTILINE), run.stdout
                gate.touch()
    assert task_id != "TASK_ID"
    assert (tmp_path / "long.txt").read_text() == "x" * 20_000
