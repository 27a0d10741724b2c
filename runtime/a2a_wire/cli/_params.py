"""Click parameter types of the client commands."""

from __future__ import annotations

import re
from typing import Any

import click

__all__ = ["ByteSize"]

_SIZE = re.compile(r"\s*(\d+)\s*(B|KiB|MiB|GiB)?\s*", re.IGNORECASE)
_UNITS = {"": 1, "b": 1, "kib": 1024, "mib": 1024**2, "gib": 1024**3}


class ByteSize(click.ParamType[int]):
    """A number of bytes: ``65536``, ``64KiB``, ``60MiB``, ``1GiB``."""

    name = "size"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        """The size in bytes (a positive number)."""
        if isinstance(value, int):
            return value
        found = _SIZE.fullmatch(str(value))
        size = int(found.group(1)) * _UNITS[(found.group(2) or "").lower()] if found else 0
        if size < 1:
            self.fail(f"{value!r} is not a size such as 1048576, 512KiB or 64MiB", param, ctx)
        return size
