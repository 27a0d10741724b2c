"""The pip command that adds an extra to the a2a-wire of this environment.

The target is where this copy came from, as pip recorded it (PEP 610 ``direct_url.json``): the
checkout of an editable or folder install, the wheel or sdist file, else the package name (an
index install records nothing). The command runs this interpreter's pip, so it installs into
the environment the command line runs from, activated or not.
"""

from __future__ import annotations

import importlib
import json
import shlex
import sys
from importlib import metadata
from pathlib import Path
from urllib.parse import unquote, urlsplit

__all__ = ["DISTRIBUTION", "install_command", "missing_extra"]

DISTRIBUTION = "a2a-wire"
"""The distribution name (``[project] name`` of pyproject.toml)."""


def _origin() -> tuple[str, bool] | None:
    """Where pip installed this distribution from, and whether editable; ``None``: an index."""
    try:
        text = metadata.distribution(DISTRIBUTION).read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return None
    if not text:
        return None
    try:
        record = json.loads(text)
        url = str(record["url"])
    except (ValueError, KeyError, TypeError):
        return None
    editable = bool(record.get("dir_info", {}).get("editable", False))
    parts = urlsplit(url)
    if parts.scheme != "file":
        return url, editable
    path = Path(unquote(parts.path))
    return (str(path), editable) if path.exists() else None


def install_command(extra: str) -> str:
    """A shell command line installing a2a-wire with ``extra`` as this copy was installed.

    Args:
        extra: The extra's name (``[project.optional-dependencies]``), e.g. ``"postgresql"``.

    Returns:
        E.g. ``/srv/venv/bin/python -m pip install -e '/src/a2a-wire[postgresql]'``.
    """
    origin = _origin()
    target, editable = origin if origin is not None else (DISTRIBUTION, False)
    if "://" in target:  # a remote archive: a PEP 508 direct reference carries the extra
        requirement = f"{DISTRIBUTION}[{extra}] @ {target}"
    else:  # a path or the name: pip reads the extra after either
        requirement = f"{target}[{extra}]"
    words = [sys.executable, "-m", "pip", "install", *(["-e"] if editable else [])]
    return shlex.join([*words, requirement])


def missing_extra(module: str, extra: str, what: str) -> str | None:
    """Import ``module`` now; if it fails, say what needs it and the command that installs it.

    Args:
        module: The module the extra brings, e.g. ``"asyncpg"``.
        extra: The extra's name.
        what: What needs it, e.g. ``'storage "postgresql"'``.

    Returns:
        ``None`` when the module imports, else a problem message naming the command.
    """
    try:
        importlib.import_module(module)
    except ImportError:
        return f"{what} needs {module}, in the {extra} extra: {install_command(extra)}"
    return None
