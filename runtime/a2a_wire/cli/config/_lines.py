"""Where each key of a TOML document is written, so configuration errors can name a line.

:mod:`tomllib` reports the line of a syntax error but keeps no positions in the parsed values.
:func:`key_lines` scans the text of a document that tomllib already accepted and maps each key
path to the line that defines it: ``("server", "port")`` for ``port`` under ``[server]``,
``("skills", 1, "executor")`` for ``executor`` in the second ``[[skills]]`` table. Table headers
map too (``("skills", 1)``). Keys inside inline tables and multi-line values are not indexed;
:func:`line_of` then falls back to the nearest enclosing key that is. It is a scanner, not a
parser: strings (including multi-line ones), comments and brackets are tracked just enough
that nothing inside a value is mistaken for a key.
"""

from __future__ import annotations

import re

__all__ = ["KeyPath", "key_lines", "line_of"]

KeyPath = tuple[str | int, ...]

_BARE = r"[A-Za-z0-9_-]+"
_BASIC = r'"(?:[^"\\]|\\.)*"'
_LITERAL = r"'[^']*'"
_KEY = rf"(?:{_BARE}|{_BASIC}|{_LITERAL})"
_DOTTED = rf"{_KEY}(?:\s*\.\s*{_KEY})*"
_HEADER = re.compile(rf"\s*(\[\[|\[)\s*({_DOTTED})\s*\]\]?")
_ASSIGN = re.compile(rf"\s*({_DOTTED})\s*=(.*)")
_PART = re.compile(rf"\s*({_KEY})\s*\.?")


def _split(dotted: str) -> list[str]:
    keys = []
    for match in _PART.finditer(dotted):
        key = match.group(1)
        if key[0] == '"':
            key = key[1:-1].encode("utf-8").decode("unicode_escape")
        elif key[0] == "'":
            key = key[1:-1]
        keys.append(key)
    return keys


def _scan_value(value: str, depth: int) -> tuple[int, str | None]:
    """Bracket depth after ``value`` and the multi-line string delimiter left open, if any."""
    i = 0
    while i < len(value):
        ch = value[i]
        if ch == "#":
            break
        if value.startswith(('"""', "'''"), i):
            quote = value[i : i + 3]
            end = value.find(quote, i + 3)
            if end < 0:
                return depth, quote
            i = end + 3
            continue
        if ch in "\"'":
            i = _string_end(value, i)
            continue
        if ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        i += 1
    return depth, None


def _string_end(text: str, start: int) -> int:
    quote = text[start]
    i = start + 1
    while i < len(text) and text[i] != quote:
        i += 2 if quote == '"' and text[i] == "\\" else 1
    return i + 1


def _resolve(keys: list[str], counts: dict[KeyPath, int], new_item: bool) -> KeyPath:
    """The path of a header's keys, with array-of-tables indexes filled in."""
    path: KeyPath = ()
    for position, key in enumerate(keys):
        path = (*path, key)
        if new_item and position == len(keys) - 1:
            counts[path] = counts.get(path, 0) + 1
        if path in counts:
            path = (*path, counts[path] - 1)
    return path


def key_lines(text: str) -> dict[KeyPath, int]:
    """Map the key paths of a TOML document to their 1-based line numbers.

    Args:
        text: A document :mod:`tomllib` parsed without error.

    Returns:
        Each table header and each ``key = value`` outside inline values, by key path.
    """
    lines: dict[KeyPath, int] = {}
    counts: dict[KeyPath, int] = {}
    table: KeyPath = ()
    depth = 0
    open_quote: str | None = None
    for number, line in enumerate(text.splitlines(), 1):
        if open_quote is not None:
            end = line.find(open_quote)
            if end < 0:
                continue
            line, open_quote = line[end + 3 :], None
            depth, open_quote = _scan_value(line, depth)
            continue
        if depth > 0:
            depth, open_quote = _scan_value(line, depth)
            continue
        header = _HEADER.match(line)
        if header is not None and line.lstrip().startswith("["):
            table = _resolve(_split(header.group(2)), counts, header.group(1) == "[[")
            lines.setdefault(table, number)
            continue
        assign = _ASSIGN.match(line)
        if assign is not None:
            lines.setdefault((*table, *_split(assign.group(1))), number)
            depth, open_quote = _scan_value(assign.group(2), 0)
    return lines


def line_of(lines: dict[KeyPath, int], path: KeyPath) -> int | None:
    """The line of ``path``, or of its nearest indexed ancestor; ``None`` if there is none.

    Args:
        lines: The result of :func:`key_lines`.
        path: A key path such as ``("skills", 0, "options", "chunk_size")``.

    Returns:
        A 1-based line number, or ``None``.
    """
    while path:
        found = lines.get(path)
        if found is not None:
            return found
        path = path[:-1]
    return None
