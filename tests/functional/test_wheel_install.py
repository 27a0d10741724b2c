"""The release artefacts work away from the checkout: ``python -m build`` makes the sdist and,
from it, the wheel; the wheel installs with each extra into a fresh venv (pip's cache and the
machine's index settings apply), whose ``a2a-wire serve --check`` accepts what the extras
provide and names the exact command for what they do not, and whose ``a2a-wire`` runs the
README's tour.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from tour_support import run_tour

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

PROJECT = Path(__file__).resolve().parents[2]

POSTGRES = '[server]\nstorage = "postgresql"\n\n[postgresql]\ndsn = "postgresql://a@127.0.0.1/t"\n'
SIGNING = (
    '[server]\npublic_url = "https://agent.example"\n\n'
    '[[security.signing_keys]]\nkey_file = "card-key.pem"\nkid = "k1"\n'
)


@dataclass(frozen=True)
class Dist:
    wheel: Path
    sdist: Path


def _run(
    command: list[str], *, cwd: Path, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run(
        command,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Dist:
    """The sdist and wheel of a copy of the checkout (what git would commit, nothing built)."""
    root = tmp_path_factory.mktemp("release")
    source = root / "src"
    listed = _run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=PROJECT
    )
    assert listed.returncode == 0, listed.stderr
    for name in filter(None, listed.stdout.split("\0")):
        if (PROJECT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(PROJECT / name, source / name)
    built = _run(
        [sys.executable, "-m", "build", "--outdir", str(root / "dist"), str(source)], cwd=root
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    (wheel,) = (root / "dist").glob("a2a_wire-*-py3-none-any.whl")
    (sdist,) = (root / "dist").glob("a2a_wire-*.tar.gz")
    return Dist(wheel, sdist)


def test_the_sdist_holds_what_the_wheel_is_built_from(dist: Dist) -> None:
    with tarfile.open(dist.sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    for expected in (
        "pyproject.toml",
        "README.md",
        "runtime/a2a_wire/__init__.py",
        "runtime/a2a_wire/cli/inspect/static/index.html",
        "generated/types.py",
    ):
        assert expected in names
    assert not [name for name in names if name.startswith(("codegen/", "fixtures/", "build/"))]


def test_the_readme_installs_the_wheel_that_build_makes(dist: Dist) -> None:
    readme = (PROJECT / "README.md").read_text(encoding="utf-8")
    assert f'pip install "dist/{dist.wheel.name}[cli]"' in readme


def _venv(where: Path, dist: Dist, extras: str) -> Path:
    """A fresh venv with the wheel and ``extras``; returns its interpreter."""
    made = _run([sys.executable, "-m", "venv", str(where)], cwd=where.parent)
    assert made.returncode == 0, made.stderr
    python = where / "bin" / "python"
    installed = _run(
        [str(python), "-m", "pip", "install", "-q", f"{dist.wheel}[{extras}]"], cwd=where.parent
    )
    assert installed.returncode == 0, installed.stderr[-3000:]
    found = _run([str(python), "-c", "import a2a_wire; print(a2a_wire.__file__)"], cwd=where.parent)
    assert found.stdout.startswith(str(where / "lib")), found.stdout  # not the checkout
    return python


def _check(python: Path, config: Path | None, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``a2a-wire serve --check`` through the venv's console script."""
    args = ["--config", str(config)] if config is not None else ["--data-dir", str(cwd / "data")]
    return _run([str(python.parent / "a2a-wire"), "serve", "--check", *args], cwd=cwd)


def _signing_key(path: Path) -> None:
    from jwcrypto import jwk

    key = jwk.JWK.generate(kty="EC", crv="P-256")
    path.write_bytes(key.export_to_pem(private_key=True, password=None))


@pytest.mark.parametrize("extras", ["cli", "cli,postgresql", "cli,signing"])
def test_the_wheel_with_each_extra(dist: Dist, tmp_path: Path, extras: str) -> None:
    python = _venv(tmp_path / "venv", dist, extras)
    _signing_key(tmp_path / "card-key.pem")
    configs = {"postgresql": tmp_path / "pg.toml", "signing": tmp_path / "signed.toml"}
    configs["postgresql"].write_text(POSTGRES, encoding="utf-8")
    configs["signing"].write_text(SIGNING, encoding="utf-8")

    default = _check(python, None, tmp_path)
    assert default.returncode == 0 and default.stdout.startswith("configuration OK"), default
    missing: dict[str, str] = {}
    for extra, config in configs.items():
        checked = _check(python, config, tmp_path)
        if extra in extras.split(","):
            assert checked.returncode == 0, (extra, checked.stderr)
            continue
        assert checked.returncode == 6, (extra, checked.stderr)
        command = shlex.join([str(python), "-m", "pip", "install", f"{dist.wheel}[{extra}]"])
        assert checked.stderr.rstrip().endswith(f"extra: {command}"), checked.stderr
        missing[extra] = command
    assert len(missing) == 3 - len(extras.split(","))

    if extras == "cli":
        (tmp_path / "tour").mkdir()
        run_tour(tmp_path / "tour", str(python))
        # What the message says to run, run as it says it: then the configuration checks.
        added = _run(shlex.split(missing["postgresql"]), cwd=tmp_path)
        assert added.returncode == 0, added.stderr[-3000:]
        assert _check(python, configs["postgresql"], tmp_path).returncode == 0


def test_an_index_install_is_told_the_package_form(dist: Dist, tmp_path: Path) -> None:
    """Installed by name from a package index (here a folder of wheels): pip records no origin."""
    where = tmp_path / "venv"
    assert _run([sys.executable, "-m", "venv", str(where)], cwd=tmp_path).returncode == 0
    python = where / "bin" / "python"
    pip = [str(python), "-m", "pip", "install", "-q", "--find-links", str(dist.wheel.parent)]
    installed = _run([*pip, "a2a-wire[cli]"], cwd=tmp_path)
    assert installed.returncode == 0, installed.stderr[-3000:]
    config = tmp_path / "pg.toml"
    config.write_text(POSTGRES, encoding="utf-8")
    checked = _check(python, config, tmp_path)
    assert checked.returncode == 6, checked.stderr
    command = shlex.join([str(python), "-m", "pip", "install", "a2a-wire[postgresql]"])
    assert checked.stderr.rstrip().endswith(f"extra: {command}"), checked.stderr
