"""``[limits]`` and ``[push]``: the server's settings, read field by field from the configuration.

Every field of :class:`~a2a_wire.server.ServerSettings` (but those ``[server]`` sets)
and of :class:`~a2a_wire.server.push.PushSettings` whose default is a boolean, an
integer, a number or a string is a key, by its name; a field added to either class is a key
without any change here. The classes check their own values; :func:`_build` turns each refusal
into a problem at the key's line.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from a2a_wire.cli.config._schema import SERVER_FIELDS, ServerSection, Table, allow_list
from a2a_wire.netguard import AddressPolicy
from a2a_wire.server import ServerSettings
from a2a_wire.server.push import PushSettings

__all__ = ["read_push", "read_settings"]

T = TypeVar("T")


def _scalar_fields(table: Table, cls: type[Any], skip: tuple[str, ...]) -> dict[str, Any]:
    """Read every field of dataclass ``cls`` whose default is a bool, int, float or str."""
    values: dict[str, Any] = {}
    for spec in dataclasses.fields(cls):
        if spec.name in skip or not spec.init:
            continue
        default = spec.default
        if isinstance(default, bool):
            values[spec.name] = table.flag(spec.name, default)
        elif isinstance(default, int):
            values[spec.name] = table.integer(spec.name, default, 0)
        elif isinstance(default, float):
            values[spec.name] = table.number(spec.name, default)
        elif isinstance(default, str):
            values[spec.name] = table.text(spec.name, default)
    return values


def _build(
    cls: Callable[..., T], values: Mapping[str, Any], tables: Mapping[str, Table]
) -> T | None:
    """``cls(**values)``, with each refusal recorded at the key that caused it.

    Every value is first tried alone (the other fields at their defaults, which are valid), so a
    range error is reported at its own key and line, and all of them in one pass; a value refused
    alone is tried again beside the values that passed, so that ``backoff_cap_seconds = 0.2``
    with ``backoff_base_seconds = 0.05`` is not refused for being below the default base. Then the values
    that passed are tried together, for the rules between fields (``backoff_cap_seconds`` below
    ``backoff_base_seconds``), reported at the first key the message names.

    Args:
        cls: A settings dataclass whose ``__post_init__`` raises :class:`ValueError`.
        values: Field values by name.
        tables: The table each field was read from.

    Returns:
        The instance, or ``None`` when a value was refused.
    """
    alone: dict[str, ValueError] = {}
    for name, value in values.items():
        try:
            cls(**{name: value})
        except ValueError as exc:
            alone[name] = exc
    passed = {name: value for name, value in values.items() if name not in alone}
    refused: set[str] = set()
    for name, error in alone.items():
        try:  # refused beside the defaults, but perhaps fine beside the other values given
            cls(**passed, **{name: values[name]})
        except ValueError:
            tables[name].problem((name,), str(error).removeprefix(f"{name} "))
            refused.add(name)
    accepted = {name: value for name, value in values.items() if name not in refused}
    try:
        built = cls(**accepted)  # the rules between fields, over the values that passed alone
    except ValueError as exc:
        named = [name for name in accepted if name in str(exc)]
        owner = tables[named[0]] if named else next(iter(tables.values()))
        owner.problem((named[0],) if named else (), str(exc))
        return None
    return None if refused else built


def read_push(table: Table, allow: tuple[str, ...]) -> PushSettings | None:
    """``[push]``: delivery settings; its ``allow`` adds to the ``[network]`` allowlist."""
    values = _scalar_fields(table, PushSettings, ("allowlist",))
    entries = (*allow, *allow_list(table, "allow"))
    table.done()
    try:
        policy = AddressPolicy.from_strings(entries)
    except ValueError:  # each bad entry is recorded already, at its own key
        return None
    built = _build(PushSettings, values, dict.fromkeys(values, table))
    return None if built is None else dataclasses.replace(built, allowlist=policy)


def read_settings(
    root: Table, server_table: Table, server: ServerSection, allow: tuple[str, ...]
) -> ServerSettings | None:
    """The :class:`ServerSettings` from ``[server]``, ``[limits]`` and ``[push]``.

    Args:
        root: The document.
        server_table: Its ``[server]`` table (where the ``[server]`` fields are reported).
        server: The ``[server]`` section as read.
        allow: The ``[network]`` allowlist.

    Returns:
        The settings, or ``None`` when they were refused (every problem is recorded).
    """
    limits = root.table("limits")
    values = _scalar_fields(limits, ServerSettings, SERVER_FIELDS)
    limits.done()
    tables = dict.fromkeys(values, limits)
    for name in SERVER_FIELDS:
        values[name] = getattr(server, name)
        tables[name] = server_table
    push = read_push(root.table("push"), allow)
    settings = _build(ServerSettings, values, tables)
    if push is None or settings is None:
        return None
    return dataclasses.replace(settings, push=push)
