"""The examples the README shows: the configurations load, ``my_agent`` works, the docs agree."""

from __future__ import annotations

import re
import signal
import subprocess
from pathlib import Path
from typing import Any

import click
import pytest
from e2e_support import SCRIPT, ServerProcess, cli, environment, finish, free_port, write_config
from server_support import envelope, post, send_params

from a2a_wire.cli import cli as main_group
from a2a_wire.cli._app import build_app
from a2a_wire.cli.config import load
from a2a_wire.server import verify_secret

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


@pytest.mark.parametrize("name", ["serve.toml", "my_agent.toml", "conformance.toml"])
def test_example_configurations_load(name: str) -> None:
    config = load(EXAMPLES / name)
    assert config.skills


def test_serve_example_holds_the_defaults() -> None:
    example = load(EXAMPLES / "serve.toml", data_dir="/tmp/x")
    default = load(None, data_dir="/tmp/x")
    assert example.server == default.server
    assert example.settings == default.settings
    assert example.card == default.card
    assert example.postgresql == default.postgresql


def test_readme_points_to_the_configuration_reference() -> None:
    """The keys themselves are checked in ``test_settings_documented.py``."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "(docs/server.md#configuration-reference)" in readme
    assert "\n## Configuration reference\n" in (ROOT / "docs" / "server.md").read_text("utf-8")


async def test_my_agent_reverses(aiohttp_client: Any, tmp_path: Path) -> None:
    config = load(EXAMPLES / "my_agent.toml", data_dir=str(tmp_path))
    app, _ = build_app(config)
    client = await aiohttp_client(app)
    answer = await (await post(client, envelope("SendMessage", send_params("stressed")))).json()
    task = answer["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert task["artifacts"][0]["parts"] == [{"text": "desserts"}]


@pytest.mark.parametrize("text", ["one two three", ""])
async def test_my_agent_streams_one_artifact_in_chunks(
    aiohttp_client: Any, tmp_path: Path, text: str
) -> None:
    config = load(EXAMPLES / "my_agent.toml", data_dir=str(tmp_path))
    app, _ = build_app(config)
    client = await aiohttp_client(app)
    params = send_params(text, metadata={"skillId": "reverse-words"})
    answer = await (await post(client, envelope("SendMessage", params))).json()
    task = answer["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert [a["name"] for a in task["artifacts"]] == ["reversed"], "one artifact, not a chunk each"
    assert "".join(p["text"] for p in task["artifacts"][0]["parts"]) == " ".join(text.split()[::-1])


def _python_blocks(markdown: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```$", markdown, flags=re.MULTILINE | re.DOTALL)


def test_the_readme_executors_are_the_example_file() -> None:
    """What a reader copies from the README is what ``test_my_agent_*`` run."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    example = (EXAMPLES / "my_agent.py").read_text(encoding="utf-8")
    blocks = _python_blocks(readme.split("## Your own executor", 1)[1].split("\n## ", 1)[0])
    assert len(blocks) == 2
    for block in blocks:
        assert block in example


def test_hash_secret_command() -> None:
    result = cli("hash-secret", "--secret", "s3cret")
    assert result.returncode == 0
    assert verify_secret("s3cret", result.stdout.strip())


def _tour() -> list[str]:
    """The command lines of the README's "Then try:" block."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("Then try:", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
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


def test_the_readme_tour_runs(tmp_path: Path) -> None:
    lines = _tour()
    assert lines[0] == "A=.venv/bin/a2a-wire; URL=http://127.0.0.1:8765"
    port = free_port()
    gate = tmp_path / "gate"
    gate.touch()  # open: every echo runs through
    config = write_config(
        tmp_path / "tour.toml", TOUR, port=port, data=tmp_path / "data", gate=gate
    )
    with ServerProcess(["--config", str(config)], tmp_path / "server.log", port) as server:
        prelude = f"A={SCRIPT}; URL={server.url}\n"
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


def _leaf_commands(group: click.Group, prefix: str = "") -> dict[str, click.Command]:
    leaves: dict[str, click.Command] = {}
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            leaves.update(_leaf_commands(command, f"{prefix}{name} "))
        elif not command.hidden:
            leaves[prefix + name] = command
    return leaves


def _command_rows() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = readme.split("## The command line", 1)[1].split("\n\n", 2)[1]
    return [row for row in table.splitlines() if row.startswith("| `a2a-wire ")]


def _row_of(path: str, rows: list[str]) -> str:
    *group, name = path.split()
    head = " ".join(["a2a-wire", *group])
    alternatives = r"\\?\|"  # `get|delete`, escaped in a table as `get\|delete`
    pattern = re.compile(
        rf"`{re.escape(head)} ([\w-]+{alternatives})*{re.escape(name)}({alternatives}[\w-]+)*[ `]"
    )
    found = [row for row in rows if pattern.search(row)]
    assert found, f"{path} is not in the README's command table"
    return found[0]


def test_the_readme_command_table_has_every_command() -> None:
    rows = _command_rows()
    leaves = _leaf_commands(main_group)
    assert "db migrate" in leaves
    for path in leaves:
        _row_of(path, rows)
    for path in ("serve", "db migrate"):  # their rows list every option
        row = _row_of(path, rows)
        options = [p for p in leaves[path].params if isinstance(p, click.Option) and not p.hidden]
        for option in options:
            flag = max(option.opts, key=len)
            if flag != "--help":
                assert f"[{flag}" in row, (path, flag)
