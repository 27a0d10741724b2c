"""``serve --check`` loads the optional libraries its configuration needs, and a missing one is
exit 6 with the pip command that installs its extra, as this copy of a2a-wire was installed.

A missing library is simulated the way Python itself spells "not importable": the CLI runs in a
subprocess whose ``sys.modules`` holds ``None`` under the module's name.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from e2e_support import PYTHON, environment

from a2a_wire.cli._install import install_command

ROOT = Path(__file__).resolve().parents[2]

POSTGRES = """\
[server]
storage = "postgresql"

[postgresql]
dsn = "postgresql://a2a@127.0.0.1:5432/tasks"
"""

SIGNING = """\
[server]
public_url = "https://agent.example"

[[security.signing_keys]]
key_file = "card-key.pem"
kid = "k1"
"""


def serve_without(modules: list[str], *args: str) -> subprocess.CompletedProcess[str]:
    """``a2a-wire serve ARGS`` in a Python where ``modules`` cannot be imported."""
    blocked = "".join(f"sys.modules[{name!r}] = None; " for name in modules)
    program = (
        f"import sys; {blocked}from a2a_wire.cli import main; sys.argv[0] = 'a2a-wire'; main()"
    )
    return subprocess.run(
        [PYTHON, "-c", program, "serve", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=environment(),
        stdin=subprocess.DEVNULL,
    )


def checkout_command(extra: str) -> str:
    """What this test venv (``make install``: editable, from this checkout) is told to run."""
    return shlex.join([sys.executable, "-m", "pip", "install", "-e", f"{ROOT}[{extra}]"])


@pytest.mark.parametrize("check", [True, False], ids=["check", "serve"])
def test_postgresql_storage_without_asyncpg_is_exit_6_with_the_command(
    tmp_path: Path, check: bool
) -> None:
    config = tmp_path / "pg.toml"
    config.write_text(POSTGRES, encoding="utf-8")
    args = ["--config", str(config), *(["--check"] if check else [])]
    run = serve_without(["asyncpg"], *args)
    assert run.returncode == 6, run.stderr
    assert run.stderr.splitlines()[1:] == [
        f'  {config}:2: server.storage: "postgresql" needs asyncpg, in the postgresql extra: '
        + checkout_command("postgresql")
    ]
    assert run.stdout == "", "nothing was started"


def test_postgresql_storage_with_asyncpg_checks_ok(tmp_path: Path) -> None:
    config = tmp_path / "pg.toml"
    config.write_text(POSTGRES, encoding="utf-8")
    run = serve_without([], "--config", str(config), "--check")
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("configuration OK")


def test_sqlite_storage_needs_no_asyncpg(tmp_path: Path) -> None:
    run = serve_without(["asyncpg"], "--data-dir", str(tmp_path), "--check")
    assert run.returncode == 0, run.stderr


def test_signing_keys_without_the_signing_extra(tmp_path: Path) -> None:
    config = tmp_path / "signed.toml"
    config.write_text(SIGNING, encoding="utf-8")
    run = serve_without(["jwcrypto"], "--config", str(config), "--check")
    assert run.returncode == 6, run.stderr
    assert run.stderr.splitlines()[1:] == [
        f"  {config}:4: security.signing_keys[0]: card signing needs the signing extra: "
        + checkout_command("signing")
    ]


def test_the_extras_named_are_those_of_pyproject() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"][
        "optional-dependencies"
    ]
    assert any(dep.startswith("asyncpg") for dep in extras["postgresql"])
    assert any(dep.startswith("jwcrypto") for dep in extras["signing"])


def fake_install(site: Path, direct_url: dict[str, object] | None) -> None:
    """A dist-info of a2a-wire in ``site`` as pip writes it, with PEP 610's record if given."""
    info = site / "a2a_wire-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: a2a-wire\nVersion: 0.1.0\n")
    if direct_url is not None:
        (info / "direct_url.json").write_text(json.dumps(direct_url))


def _pip(*target: str) -> str:
    return shlex.join([sys.executable, "-m", "pip", "install", *target])


def test_install_command_follows_how_the_copy_was_installed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wheel = tmp_path / "dist" / "a2a_wire-0.1.0-py3-none-any.whl"
    wheel.parent.mkdir()
    wheel.write_bytes(b"")
    checkout = tmp_path / "src dir"  # a space: the command quotes it
    checkout.mkdir()
    cases = [
        ({"url": checkout.as_uri(), "dir_info": {"editable": True}}, _pip("-e", f"{checkout}[x]")),
        ({"url": checkout.as_uri(), "dir_info": {}}, _pip(f"{checkout}[x]")),
        ({"url": wheel.as_uri(), "archive_info": {}}, _pip(f"{wheel}[x]")),
        ({"url": (tmp_path / "gone.whl").as_uri(), "archive_info": {}}, _pip("a2a-wire[x]")),
        (
            {"url": "https://example.org/a.whl", "archive_info": {}},
            _pip("a2a-wire[x] @ https://example.org/a.whl"),
        ),
        (None, _pip("a2a-wire[x]")),  # from an index: pip records no origin
    ]
    for n, (record, expected) in enumerate(cases):
        site = tmp_path / f"site{n}"
        fake_install(site, record)
        with monkeypatch.context() as patch:
            patch.syspath_prepend(str(site))
            assert install_command("x") == expected, record
