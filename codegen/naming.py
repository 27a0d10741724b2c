"""Every name transformation the generator makes, and nothing else."""

from __future__ import annotations

import builtins
import keyword
import re

_RESERVED = frozenset(keyword.kwlist) | frozenset(dir(builtins)) | {"self", "cls"}
# Names the generated code itself uses in class bodies and methods (annotations, locals).
_SHADOWED = frozenset(
    {"self", "cls", "obj", "out", "prefix", "list", "dict", "str", "int", "float", "bool", "bytes"}
    | {"object", "type", "Any", "UNSET"}
)
_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def safe(name: str) -> str:
    """Append ``_`` to a keyword or a name the generated code relies on (``list``, ``self``).

    Other builtins (``id``, ``format``) stay as they are: shadowing them as attributes is harmless.
    """
    if keyword.iskeyword(name) or name in _SHADOWED:
        return name + "_"
    return name


def field_py_name(proto_name: str) -> str:
    """Python attribute name of a proto field (proto field names are already snake_case)."""
    return safe(proto_name)


def snake_case(name: str) -> str:
    """``SendMessage`` -> ``send_message``; ``GetExtendedAgentCard`` -> ``get_extended_agent_card``."""
    return _CAMEL_BOUNDARY.sub("_", name).lower()


def enum_member_name(enum_name: str, value_name: str) -> str:
    """Drop the enum's type prefix: ``TASK_STATE_COMPLETED`` in ``TaskState`` -> ``COMPLETED``.

    A member whose remainder would start with a digit or be a keyword keeps its full name.
    """
    prefix = snake_case(enum_name).upper() + "_"
    if value_name.startswith(prefix):
        rest = value_name[len(prefix) :]
        if rest and not rest[0].isdigit() and not keyword.iskeyword(rest):
            return rest
    return value_name


def is_reserved(name: str) -> bool:
    """Whether ``name`` would shadow a keyword or builtin at module level."""
    return name in _RESERVED
