"""Griffe extension of the docs build: Sphinx roles in docstrings become links.

The runtime's docstrings name other objects the Sphinx way (``:class:`A2AClient```,
``:mod:`a2a_wire.errors```); mkdocstrings reads them as Markdown, which has no roles. Each role
becomes an optional cross-reference: a link when the name is on a page of the reference, plain
code otherwise (private modules, names no page shows), never a warning of the strict build.
"""

from __future__ import annotations

import re
from typing import Any

from griffe import Extension, NameResolutionError, Object

ROLE = re.compile(r":(?:class|mod|meth|func|attr|data|exc|obj):`(?P<target>[^`]+)`")


class SphinxRoles(Extension):
    """Rewrite ``:role:`name``` in every docstring into an optional autoref."""

    def on_object(self, *, obj: Object, **kwargs: Any) -> None:
        """Rewrite the object's docstring, resolving names in the object's scope."""
        if obj.docstring is None:
            return
        obj.docstring.value = ROLE.sub(
            lambda match: _autoref(obj, match["target"]), obj.docstring.value
        )


def _autoref(obj: Object, target: str) -> str:
    """The autoref of one role's target: ``~`` shows the last name only, ``.`` is relative."""
    short = target.startswith("~")
    target = target.lstrip("~")
    title = target.rsplit(".", 1)[-1] if short else target.lstrip(".")
    return f'<autoref identifier="{_resolve(obj, target)}" optional><code>{title}</code></autoref>'


def _resolve(obj: Object, target: str) -> str:
    """The full path of ``target`` as seen from ``obj``; the text itself when it is not found."""
    if target.startswith("a2a_wire"):
        return target
    module = obj if obj.is_module else obj.module
    if target.startswith("."):
        return f"{module.path}{target}"
    first, _, rest = target.partition(".")
    try:
        path = obj.resolve(first)
    except NameResolutionError:
        return target
    return f"{path}.{rest}" if rest else path
