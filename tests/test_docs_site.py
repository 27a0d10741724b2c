"""The documentation site: ``mkdocs build --strict`` passes and its API reference is whole.

One build (the ``docs`` extra, part of the test extra) into a temporary folder: a broken link, a
missing page or a reference mkdocstrings cannot render fails it. The reference must then hold
an anchor for every name of every public face's ``__all__``, and the pages a new agent's author
reads must show what they need (``RequestContext``'s attributes, ``TaskUpdater``'s signatures).
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mkdocstrings_handlers.python", reason="the docs extra is not installed")

import a2a_wire  # noqa: E402 - after the skip: without the docs extra nothing here runs
from a2a_wire.server import RequestContext, TaskUpdater  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent

# The public faces the reference documents (mkdocs.yml, docs/reference/).
FACES = (
    "a2a_wire",
    "a2a_wire.codec",
    "a2a_wire.errors",
    "a2a_wire.types",
    "a2a_wire.methods",
    "a2a_wire.server",
    "a2a_wire.server.store",
    "a2a_wire.server.push",
    "a2a_wire.client",
    "a2a_wire.card_signing",
    "a2a_wire.netguard",
    "a2a_wire.telemetry",
    "a2a_wire.cli",
)
# Public by name but the command line's own, documented by `--help` and docs/inspector.md.
NOT_IN_REFERENCE = {"a2a_wire.cli.config", "a2a_wire.cli.inspect"}
ANCHOR = re.compile(r'id="(a2a_wire[^"]*)"')


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    build = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    log = build.stdout + build.stderr
    assert build.returncode == 0, log
    assert "WARNING" not in log, log
    return out


def anchors(site: Path) -> set[str]:
    return {
        anchor
        for page in (site / "reference").rglob("*.html")
        for anchor in ANCHOR.findall(page.read_text(encoding="utf-8"))
    }


def public_names(face: str) -> list[str]:
    module = importlib.import_module(face)
    names = getattr(module, "__all__", None)
    if names is not None:
        return list(names)
    return [
        name
        for name, value in vars(module).items()
        if not name.startswith("_") and getattr(value, "__module__", None) == face
    ]


def test_every_public_module_has_a_face_in_the_reference() -> None:
    # Two levels below the root: deeper packages (a store's backend) export through their parent.
    public = {
        module.name
        for module in pkgutil.walk_packages(a2a_wire.__path__, "a2a_wire.")
        if not any(part.startswith("_") for part in module.name.split("."))
        and module.name.count(".") <= 2
    }
    assert public - NOT_IN_REFERENCE - {"a2a_wire.cli.inspect.static"} == set(FACES) - {"a2a_wire"}


@pytest.mark.parametrize("face", FACES)
def test_the_reference_has_every_public_name(site: Path, face: str) -> None:
    found = anchors(site)
    assert face in found
    missing = [name for name in public_names(face) if f"{face}.{name}" not in found]
    assert not missing, f"{face}: not in the API reference: {missing}"


def section(page: str, anchor: str) -> str:
    """The HTML of one object's entry: from its anchor to the next object's anchor."""
    start = page.index(f'id="{anchor}"')
    following = ANCHOR.search(page, start + len(anchor) + 5)
    return page[start : following.start() if following else len(page)]


def test_an_agent_author_finds_the_context_and_the_updater(site: Path) -> None:
    page = (site / "reference" / "server" / "index.html").read_text(encoding="utf-8")
    for field in RequestContext.__dataclass_fields__:
        assert f'id="a2a_wire.server.RequestContext.{field}"' in page, field
    methods = [
        name
        for name, member in vars(TaskUpdater).items()
        if inspect.isfunction(member) and not name.startswith("_")
    ]
    assert "add_artifact" in methods
    for name in methods:
        entry = section(page, f"a2a_wire.server.TaskUpdater.{name}")
        assert "doc-signature" in entry, f"TaskUpdater.{name} has no signature"
    assert "artifact_id" in section(page, "a2a_wire.server.TaskUpdater.add_artifact")
