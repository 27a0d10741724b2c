"""``[[security.oauth2]]`` and ``[security.tokens]``: the JWT issuers a server trusts.

Each ``[[security.oauth2]]`` table is a :class:`~a2a_wire.server.TokenIssuer` field by field;
``[security.tokens]`` is :class:`~a2a_wire.server.TokenSettings`, its ``allow`` added to the
``[network]`` allowlist for the key fetches. Nothing secret is configured here: a server only
needs the issuers' public keys, which it fetches.
"""

from __future__ import annotations

import dataclasses
import importlib.util
from collections.abc import Collection

from a2a_wire.cli._install import install_command
from a2a_wire.cli.config._limits import _build, _scalar_fields
from a2a_wire.cli.config._schema import Table, allow_list
from a2a_wire.netguard import AddressPolicy
from a2a_wire.server import TokenIssuer, TokenSettings

__all__ = ["read_issuers", "read_tokens"]

_TEXTS = ("caller_claim", "scope_claim", "discovery_url", "jwks_url", "token_url")


def read_tokens(table: Table, allow: tuple[str, ...]) -> TokenSettings:
    """``[security.tokens]``; the defaults where a value is refused (the problem is recorded)."""
    values = _scalar_fields(table, TokenSettings, ("allowlist",))
    entries = (*allow, *allow_list(table, "allow"))
    table.done()
    try:
        policy = AddressPolicy.from_strings(entries)
    except ValueError:  # each bad entry is recorded already, at its own key
        policy = AddressPolicy()
    built = _build(TokenSettings, values, dict.fromkeys(values, table)) or TokenSettings()
    return dataclasses.replace(built, allowlist=policy)


def _skills_by_scope(table: Table, skill_ids: Collection[str]) -> dict[str, tuple[str, ...]]:
    mapping = table.table("skills_by_scope")
    out = {scope: mapping.strings(scope) for scope in mapping.data}
    mapping.done()
    for scope, ids in out.items():
        for skill in ids:
            if skill != "*" and skill not in skill_ids:
                mapping.problem((scope,), f"no skill has id {skill!r}")
    return out


def read_issuers(tables: list[Table], skill_ids: Collection[str]) -> tuple[TokenIssuer, ...]:
    """``[[security.oauth2]]``: one trusted issuer per table."""
    issuers: list[TokenIssuer] = []
    if tables and importlib.util.find_spec("jwcrypto") is None:
        tables[0].problem((), f"JWT access tokens need the oauth extra: {install_command('oauth')}")
        return ()
    for table in tables:
        texts = {name: table.text(name) for name in _TEXTS if name in table.data}
        try:
            issuer = TokenIssuer(
                issuer=table.text("issuer"),
                audience=table.text("audience"),
                algorithms=table.strings("algorithms", ("RS256",)),
                required_scopes=table.strings("required_scopes"),
                skills_by_scope=_skills_by_scope(table, skill_ids),
                scheme_name=table.text("scheme_name"),
                description=table.text("description"),
                **texts,
            )
        except ValueError as exc:
            table.done()
            table.problem((), str(exc))
            continue
        table.done()
        issuers.append(issuer)
    return tuple(issuers)
