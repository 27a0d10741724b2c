"""Reading one string out of the beginning of a JSON document too large to read whole.

When an answer exceeds ``max_response_bytes`` the client still wants to say which task it was
about, so that the caller can follow the task (with less history, or a larger limit). A
JSON-RPC answer starts with its short members and a Task with its ``id`` (the a2a-wire server
writes the proto's field order), so the id is near the start: :func:`string_at` walks the
objects named by a path, skipping complete members before the wanted one, and gives up
(returns ``""``) as soon as anything is cut off, missing or of another type. It never raises.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

__all__ = ["SEND_MESSAGE_TASK_ID", "send_message_task", "string_at"]

SEND_MESSAGE_TASK_ID = ("result", "task", "id")
"""Where a SendMessage answer holds its task's id."""

_DECODER = json.JSONDecoder()
_BLANKS = " \t\n\r"


def _skip_blanks(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in _BLANKS:
        pos += 1
    return pos


def _member(text: str, pos: int, key: str) -> int:
    """Position of the value of ``key`` in the object starting at ``pos``.

    Raises:
        ValueError: Not an object, no such member in the text, or the text is cut off first.
        IndexError: The text ends inside the object.
    """
    pos = _skip_blanks(text, pos)
    if text[pos] != "{":
        raise ValueError("not an object")
    pos += 1
    while True:
        pos = _skip_blanks(text, pos)
        name, pos = _DECODER.raw_decode(text, pos)
        pos = _skip_blanks(text, pos)
        if not isinstance(name, str) or text[pos] != ":":
            raise ValueError("not a member")
        pos = _skip_blanks(text, pos + 1)
        if name == key:
            return pos
        _, pos = _DECODER.raw_decode(text, pos)  # a complete value, or ValueError
        pos = _skip_blanks(text, pos)
        if text[pos] != ",":
            raise ValueError("no such member")
        pos += 1


def string_at(head: bytes, path: Sequence[str]) -> str:
    """The string found at ``path`` in the JSON document that ``head`` begins.

    Args:
        head: The first bytes of a JSON document (possibly cut inside a character).
        path: Member names from the outer object inward, e.g. :data:`SEND_MESSAGE_TASK_ID`.

    Returns:
        The string, or ``""`` when ``head`` does not show one there.
    """
    text = head.decode("utf-8", "replace")
    try:
        pos = 0
        for key in path:
            pos = _member(text, pos, key)
        value, _ = _DECODER.raw_decode(text, pos)
    except (ValueError, IndexError, RecursionError):
        return ""
    return value if isinstance(value, str) else ""


def send_message_task(head: bytes) -> str:
    """The task id at the start of a SendMessage answer (``""``: not shown, or a Message)."""
    return string_at(head, SEND_MESSAGE_TASK_ID)
