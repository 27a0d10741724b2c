"""The examples the README shows: the configurations load, ``my_agent`` works, the docs agree."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import click
import pytest
from e2e_support import PYTHON, cli
from server_support import envelope, post, send_params
from tour_support import run_tour

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


def test_my_agent_keeps_its_tasks_apart_from_the_echo_demo(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    mine = load(EXAMPLES / "my_agent.toml").server.database
    assert mine != load(None).server.database
    assert mine.resolve() == ROOT / "data" / "my_agent" / "tasks.sqlite3"
    ignored = subprocess.run(["git", "check-ignore", "-q", str(mine)], cwd=ROOT, check=False)
    assert ignored.returncode == 0, "a demo's tasks never show up as changes of the checkout"


def test_serve_example_holds_the_defaults() -> None:
    example = load(EXAMPLES / "serve.toml", data_dir="/tmp/x")
    default = load(None, data_dir="/tmp/x")
    assert example.server == default.server
    assert example.settings == default.settings
    assert example.card == default.card
    assert example.postgresql == default.postgresql
    assert example.telemetry == default.telemetry


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


def test_the_docs_install_from_the_checkout_not_from_an_index() -> None:
    """No index has a2a-wire: an install command names the checkout or the wheel built from it."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    for page in pages:
        text = page.read_text(encoding="utf-8")
        assert not re.search(r"pip install [\"']?a2a-wire\b", text), page.name


def test_hash_secret_command() -> None:
    result = cli("hash-secret", "--secret", "s3cret")
    assert result.returncode == 0
    assert verify_secret("s3cret", result.stdout.strip())


@pytest.mark.slow
def test_the_readme_tour_runs(tmp_path: Path) -> None:
    run_tour(tmp_path, PYTHON)


def _leaf_commands(group: click.Group, prefix: str = "") -> dict[str, click.Command]:
    leaves: dict[str, click.Command] = {}
    context = click.Context(group)
    for name in group.list_commands(context):
        command = group.get_command(context, name)
        assert command is not None, name
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
