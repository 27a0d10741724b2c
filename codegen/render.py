"""Stage 3: print the IR through the Jinja2 templates, format with ruff, write the files.

The Jinja environment is strict (an undefined name fails the build) and output is deterministic:
the IR keeps declaration order, and ruff (pinned in pyproject.toml) formats every file.

Besides the rendered files, the plain Python sources of :mod:`codegen.support` are copied into
``generated/`` under the same stamp (``templates/_header.py.j2``). They are hand-written, so
they live as ordinary modules that ruff and mypy check; they are never passed through Jinja,
whose ``{{``/``{%`` markers would clash with f-strings and dict literals.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import jinja2

from codegen.model import Module

TEMPLATES = Path(__file__).parent / "templates"
SUPPORT = Path(__file__).parent / "support"
PROJECT = Path(__file__).parent.parent
OUTPUTS = {
    "__init__.py": "__init__.py.j2",
    "types.py": "types.py.j2",
    "methods.py": "methods.py.j2",
}
#: Output file -> hand-written source in ``codegen/support``, copied below the stamp.
COPIED = {"_support.py": "_support.py", "_values.py": "_values.py"}


class FormatError(Exception):
    """ruff could not format a rendered file (the template produced invalid Python)."""


def environment() -> jinja2.Environment:
    """The strict Jinja environment rooted at ``codegen/templates``."""
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )


def _format(name: str, source: str) -> str:
    command = [sys.executable, "-m", "ruff", "format", "--stdin-filename", f"generated/{name}", "-"]
    result = subprocess.run(
        command, input=source, capture_output=True, text=True, cwd=PROJECT, check=False
    )
    if result.returncode != 0:
        dump = Path(PROJECT / "build" / "unformatted" / name)
        dump.parent.mkdir(parents=True, exist_ok=True)
        dump.write_text(source)
        raise FormatError(f"ruff could not format {name} (saved to {dump}): {result.stderr}")
    return result.stdout


def render(module: Module) -> dict[str, str]:
    """Render every output file of ``generated/``; returns file name -> formatted source.

    Raises:
        FormatError: a rendered file is not valid Python.
    """
    env = environment()
    files = {
        name: _format(name, env.get_template(template).render(module=module))
        for name, template in OUTPUTS.items()
    }
    stamp = env.get_template("_header.py.j2").render(module=module)
    for name, source in COPIED.items():
        files[name] = _format(name, stamp + (SUPPORT / source).read_text())
    return files


def write(files: dict[str, str], out: Path) -> None:
    """Write ``files`` into ``out``, leaving unchanged files untouched."""
    out.mkdir(parents=True, exist_ok=True)
    for name, source in sorted(files.items()):
        target = out / name
        if not target.is_file() or target.read_text() != source:
            target.write_text(source)
