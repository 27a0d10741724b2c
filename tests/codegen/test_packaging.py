"""The built wheel carries the runtime and the generated classes, and not the build-time codegen.

Also checks that a plain (non-editable) install imports as ``a2a_wire`` without the checkout.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation"]
    subprocess.run([*command, "-q", "-w", str(out), str(PROJECT)], check=True, timeout=120)
    (built,) = out.glob("a2a_wire-*.whl")
    return built


def test_wheel_holds_runtime_and_generated_but_not_codegen(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    for expected in (
        "a2a_wire/__init__.py",
        "a2a_wire/py.typed",
        "a2a_wire/types.py",
        "a2a_wire/codec.py",
        "a2a_wire/_generated/types.py",
        "a2a_wire/_generated/_support.py",
        "a2a_wire/_generated/methods.py",
    ):
        assert expected in names
    assert not [n for n in names if n.startswith(("codegen/", "tests/", "generated/", "runtime/"))]
    assert not [n for n in names if n.endswith(".proto")]


def test_wheel_holds_every_module_of_the_source_tree(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    source = PROJECT / "runtime"
    modules = {p.relative_to(source).as_posix() for p in source.rglob("*.py")}
    assert modules and modules <= names, sorted(modules - names)
    generated = {f"a2a_wire/_generated/{p.name}" for p in (PROJECT / "generated").glob("*.py")}
    assert generated <= names


def test_wheel_holds_the_inspector_page(wheel: Path) -> None:
    from a2a_wire.cli.inspect._app import STATIC_FILES

    names = set(zipfile.ZipFile(wheel).namelist())
    static = PROJECT / "runtime" / "a2a_wire" / "cli" / "inspect" / "static"
    assets = {p.name for p in static.iterdir() if p.is_file()}
    assert assets == set(STATIC_FILES)  # every file is served, every served file exists
    assert {f"a2a_wire/cli/inspect/static/{name}" for name in assets} <= names
    # Every module or stylesheet a page file refers to is one of them (no build, no other host).
    referred = set()
    for name in assets:
        text = (static / name).read_text(encoding="utf-8")
        referred |= set(re.findall(r'from "\./([\w.-]+)"', text))
        referred |= set(re.findall(r'(?:src|href)="static/([\w.-]+)"', text))
    assert referred and referred <= assets, sorted(referred - assets)
    assert not re.search(r"https?://(?!127\.0\.0\.1)", (static / "index.html").read_text())


def test_installed_wheel_imports_without_the_checkout(wheel: Path, tmp_path: Path) -> None:
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), wheel],
        check=True,
        timeout=120,
    )
    code = (
        "import a2a_wire.types as t, a2a_wire.codec as c; "
        "print(c.encode(t.Part(text='ok')).decode(), t.__file__)"
    )
    out = subprocess.run(
        [sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(target)!r}); {code}"],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
        timeout=60,
    )
    printed, location = out.stdout.split()
    assert printed == '{"text":"ok"}'
    assert location.startswith(str(target))


def _phony_targets() -> list[str]:
    makefile = (PROJECT / "Makefile").read_text(encoding="utf-8")
    line = next(line for line in makefile.splitlines() if line.startswith(".PHONY:"))
    return line.removeprefix(".PHONY:").split()


@pytest.mark.parametrize("target", _phony_targets())
def test_every_make_target_makes_the_venv_it_uses(tmp_path: Path, target: str) -> None:
    # A dry run (make -n) on a fresh clone's state: the venv does not exist yet.
    venv = tmp_path / "venv"
    dry = subprocess.run(
        ["make", "-n", "-C", str(PROJECT), target, f"VENV={venv}", "PYTHON=python3"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    lines = dry.stdout.splitlines()
    uses = [i for i, line in enumerate(lines) if f"{venv}/bin/" in line]
    if not uses:
        return  # e.g. clean, proto: nothing from the venv
    made = [i for i, line in enumerate(lines) if f"-m venv {venv}" in line]
    assert made and made[0] < uses[0], lines
    tools = [i for i in uses if " -m pip " not in lines[i]]  # codegen, ruff, mypy, pytest, ...
    installed = [i for i, line in enumerate(lines) if " -m pip install -q -e " in line]
    assert not tools or (installed and installed[0] < tools[0]), lines


@pytest.mark.parametrize(
    ("extras", "installed"),
    [
        (None, "cli"),
        ("postgresql", "cli,postgresql"),
        ("signing,postgresql", "cli,postgresql,signing"),
        ("cli", "cli"),
    ],
)
def test_make_serve_installs_the_cli_and_the_extras_asked_for(
    tmp_path: Path, extras: str | None, installed: str
) -> None:
    command = ["make", "-n", "-C", str(PROJECT), "serve", f"VENV={tmp_path / 'venv'}"]
    dry = subprocess.run(
        [*command, *([f"EXTRAS={extras}"] if extras is not None else [])],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    (line,) = [line for line in dry.stdout.splitlines() if " -m pip install -q -e " in line]
    assert f' -e ".[{installed}]" ' in line
    pyproject = tomllib.loads((PROJECT / "pyproject.toml").read_text(encoding="utf-8"))
    assert set(installed.split(",")) <= set(pyproject["project"]["optional-dependencies"])
