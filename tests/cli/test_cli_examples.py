"""The examples the README shows: the configurations load, ``my_agent`` works, the docs agree."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from e2e_support import SCRIPT, ServerProcess, cli, environment, free_port
from server_support import envelope, post, send_params

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


def test_hash_secret_command() -> None:
    result = cli("hash-secret", "--secret", "s3cret")
    assert result.returncode == 0
    assert verify_secret("s3cret", result.stdout.strip())


def _tour() -> list[str]:
    """The command lines of the README's "Then try:" block."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("Then try:", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    return block.splitlines()


def test_the_readme_tour_runs(tmp_path: Path) -> None:
    lines = _tour()
    assert lines[0] == "A=.venv/bin/a2a-wire; URL=http://127.0.0.1:8765"
    port = free_port()
    args = ["--port", str(port), "--data-dir", str(tmp_path / "data")]
    with ServerProcess(args, tmp_path / "server.log", port) as server:
        prelude = f"A={SCRIPT}; URL={server.url}\n"
        task_id = "TASK_ID"
        for line in lines[1:]:
            run = subprocess.run(
                ["bash", "-c", prelude + line.replace("TASK_ID", task_id)],
                cwd=tmp_path,  # a fresh folder: the tour makes the files it uses
                capture_output=True,
                text=True,
                timeout=60,
                env=environment(),
                stdin=subprocess.DEVNULL,
            )
            if "--no-wait" in line:
                found = re.search(r"^task\s+(\S+)", run.stdout, flags=re.MULTILINE)
                assert found is not None, run.stdout
                task_id = found.group(1)
            finished = ("UnsupportedOperationError", "TaskNotCancelableError")
            if line.split()[1] in ("subscribe", "cancel") and run.returncode == 4:
                # The README says so: the echo task may have ended before these lines ran.
                assert any(f"error: {name} (" in run.stderr for name in finished), run.stderr
                continue
            assert run.returncode == 0, (line, run.stderr)
    assert task_id != "TASK_ID"
