"""What is wrong or odd in an agent card, as findings for the page (spec 4.4, 8.3, 8.4).

:func:`check_card` reads the card's JSON object as received, not a decoded copy, so unknown
members and wrong types stay visible. Signatures are verified only against keys the user
trusts; ``jku`` is never fetched. The findings: docs/inspector.md, "The panes".
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import yarl

from a2a_wire import codec
from a2a_wire._protocol.wire import PROTOCOL_BINDING, version_matches
from a2a_wire.errors import InvalidAgentCardError
from a2a_wire.types import AgentCard

__all__ = [
    "CAPABILITY_MEMBERS",
    "CARD_MEMBERS",
    "INTERFACE_MEMBERS",
    "SKILL_MEMBERS",
    "Finding",
    "Verify",
    "check_card",
]

#: Members of each object in A2A 1.0 (their ProtoJSON names; a test pins them to the codec).
CARD_MEMBERS = frozenset(
    "name description supportedInterfaces provider version documentationUrl capabilities "
    "securitySchemes securityRequirements defaultInputModes defaultOutputModes skills "
    "signatures iconUrl".split()
)
SKILL_MEMBERS = frozenset(
    "id name description tags examples inputModes outputModes securityRequirements".split()
)
INTERFACE_MEMBERS = frozenset("url protocolBinding tenant protocolVersion".split())
CAPABILITY_MEMBERS = frozenset("streaming pushNotifications extensions extendedAgentCard".split())

_REQUIRED = (
    "name description supportedInterfaces version capabilities defaultInputModes "
    "defaultOutputModes skills".split()
)
# Card members of A2A 0.3 and what took their place in 1.0.
_OLD_MEMBERS = {
    "url": "supportedInterfaces[].url",
    "protocolVersion": "supportedInterfaces[].protocolVersion",
    "preferredTransport": "the order of supportedInterfaces",
    "additionalInterfaces": "supportedInterfaces",
    "supportsAuthenticatedExtendedCard": "capabilities.extendedAgentCard",
    "security": "securityRequirements",
}
_BINDINGS = ("JSONRPC", "GRPC", "HTTP+JSON")
_MEDIA_TYPE = re.compile(r"^[A-Za-z0-9*][\w!#$&^.+*-]*/[\w!#$&^.+*-]+(\s*;.*)?$")
_LOOPBACK = ("127.0.0.1", "localhost", "::1")
_ALGORITHMS = ("ES256", "ES384", "ES512", "RS256", "RS384", "RS512", "PS256", "PS384", "PS512")

Verify = Callable[[Mapping[str, Any]], object]
"""Checks a card's signatures; raises :class:`~a2a_wire.errors.InvalidAgentCardError` to fail."""


@dataclass(frozen=True)
class Finding:
    """One thing noticed about a card.

    Attributes:
        level: ``"error"``, ``"warning"``, ``"info"`` or ``"ok"``.
        where: The JSON path it is about (``""`` for the whole card).
        text: What was noticed.
    """

    level: str
    where: str
    text: str

    def to_dict(self) -> dict[str, str]:
        """The finding as JSON for the page."""
        return {"level": self.level, "where": self.where, "text": self.text}


class _Notes:
    def __init__(self) -> None:
        self.found: list[Finding] = []

    def add(self, level: str, where: str, text: str) -> None:
        self.found.append(Finding(level, where, text))

    def unknown(self, obj: Mapping[str, Any], known: frozenset[str], where: str) -> None:
        for key in sorted(set(obj) - known):
            path = f"{where}.{key}" if where else key
            if not where and key in _OLD_MEMBERS:
                text = f"'{key}' is an A2A 0.3 member; 1.0 uses {_OLD_MEMBERS[key]}"
            else:
                text = f"'{key}' is not a member of this object in A2A 1.0 (ignored)"
            self.add("warning", path, text)


def check_card(document: object, verify: Verify | None = None) -> list[Finding]:
    """Everything worth saying about a card's JSON object (docs/inspector.md).

    Args:
        document: The card as received (any JSON value).
        verify: Checks signatures against trusted keys, e.g. ``CardVerifier(keys).verify``.

    Returns:
        The findings, errors first.
    """
    notes = _Notes()
    if not isinstance(document, dict):
        notes.add("error", "", f"the card is a JSON {_kind(document)}, not an object")
        return notes.found
    try:
        AgentCard.from_dict(document)
    except codec.DecodeError as exc:
        notes.add("error", exc.path, f"does not decode as an A2A 1.0 card: {exc.reason}")
    for key in _REQUIRED:
        if document.get(key) is None:
            notes.add("error", key, f"REQUIRED member '{key}' is missing")
    for key in ("name", "description", "version"):
        if document.get(key) == "":
            notes.add("warning", key, f"'{key}' is empty")
    notes.unknown(document, CARD_MEMBERS, "")
    _interfaces(document.get("supportedInterfaces"), notes)
    _capabilities(document, notes)
    _skills(document.get("skills"), notes)
    for key in ("defaultInputModes", "defaultOutputModes"):
        _media_types(document.get(key), key, notes)
    _security(document, notes)
    for key in ("documentationUrl", "iconUrl"):
        _url(document.get(key), key, notes, required=False)
    _signatures(document, verify, notes)
    order = {"error": 0, "warning": 1, "info": 2, "ok": 3}
    return sorted(notes.found, key=lambda f: order[f.level])


def _kind(value: object) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    return "null" if value is None else type(value).__name__


def _url(value: object, where: str, notes: _Notes, *, required: bool = True) -> None:
    if value is None or value == "":
        if required:
            notes.add("error", where, "the URL is missing")
        return
    parsed = yarl.URL(str(value)) if isinstance(value, str) else None
    if parsed is None or not parsed.is_absolute() or parsed.scheme not in ("http", "https"):
        notes.add("warning", where, f"{value!r} is not an absolute http(s) URL")
    elif parsed.scheme == "http" and parsed.host not in _LOOPBACK:
        notes.add("warning", where, "plain http: traffic and credentials travel unencrypted")


def _interfaces(value: object, notes: _Notes) -> None:
    if not isinstance(value, list):
        return
    if not value:
        notes.add("error", "supportedInterfaces", "the card offers no interface at all")
    chosen = ""
    for index, iface in enumerate(value):
        where = f"supportedInterfaces[{index}]"
        if not isinstance(iface, dict):
            continue
        notes.unknown(iface, INTERFACE_MEMBERS, where)
        for key in ("protocolBinding", "protocolVersion"):
            if not iface.get(key):
                notes.add("error", f"{where}.{key}", f"'{key}' is missing")
        _url(iface.get("url"), f"{where}.url", notes)
        binding = str(iface.get("protocolBinding") or "")
        if binding and binding.upper() not in _BINDINGS:
            notes.add("info", where, f"binding {binding!r} is not one A2A 1.0 defines")
        matches = binding.upper() == PROTOCOL_BINDING and version_matches(
            str(iface.get("protocolVersion") or "")
        )
        if matches and not chosen:
            chosen = where
            tenant = f" (tenant {iface['tenant']!r})" if iface.get("tenant") else ""
            notes.add("ok", where, f"JSON-RPC 1.0 interface at {iface.get('url')}{tenant}")
    if value and not chosen:
        offers = ", ".join(
            f"{i.get('protocolBinding')} {i.get('protocolVersion')}"
            for i in value
            if isinstance(i, dict)
        )
        notes.add(
            "error",
            "supportedInterfaces",
            f"no JSONRPC 1.0 interface (offers: {offers or 'nothing usable'}); "
            "a2a-wire cannot talk to this agent",
        )


def _capabilities(document: dict[str, Any], notes: _Notes) -> None:
    caps = document.get("capabilities")
    if not isinstance(caps, dict):
        return
    notes.unknown(caps, CAPABILITY_MEMBERS, "capabilities")
    if caps.get("streaming") is not True:
        notes.add("info", "capabilities.streaming", "no streaming: streamed sends may be refused")
    if caps.get("pushNotifications") is not True:
        notes.add(
            "info", "capabilities.pushNotifications", "no push notifications: configs refused"
        )
    if caps.get("extendedAgentCard") is True and not document.get("securitySchemes"):
        notes.add(
            "warning",
            "capabilities.extendedAgentCard",
            "an extended card is offered but no security scheme says how to authenticate",
        )
    extensions = caps.get("extensions")
    for index, ext in enumerate(extensions if isinstance(extensions, list) else []):
        if isinstance(ext, dict) and ext.get("required") is True:
            notes.add(
                "warning",
                f"capabilities.extensions[{index}]",
                f"requires extension {ext.get('uri')!r}: calls that do not request it fail",
            )


def _skills(value: object, notes: _Notes) -> None:
    if not isinstance(value, list):
        return
    if not value:
        notes.add("warning", "skills", "the card lists no skills")
    seen: set[str] = set()
    for index, skill in enumerate(value):
        where = f"skills[{index}]"
        if not isinstance(skill, dict):
            continue
        notes.unknown(skill, SKILL_MEMBERS, where)
        for key in ("id", "name", "description", "tags"):
            if skill.get(key) is None or skill.get(key) == "":
                notes.add("error", f"{where}.{key}", f"REQUIRED member '{key}' is missing")
        skill_id = str(skill.get("id") or "")
        if skill_id and skill_id in seen:
            notes.add("error", f"{where}.id", f"skill id {skill_id!r} is used twice")
        seen.add(skill_id)
        for key in ("inputModes", "outputModes"):
            _media_types(skill.get(key), f"{where}.{key}", notes, empty_ok=True)


def _media_types(value: object, where: str, notes: _Notes, *, empty_ok: bool = False) -> None:
    if not isinstance(value, list):
        return
    if not value and not empty_ok:
        notes.add("warning", where, "no media types listed")
    for index, media in enumerate(value):
        if not isinstance(media, str) or not _MEDIA_TYPE.match(media):
            notes.add("warning", f"{where}[{index}]", f"{media!r} is not a type/subtype")


def _security(document: dict[str, Any], notes: _Notes) -> None:
    schemes = document.get("securitySchemes")
    declared = set(schemes) if isinstance(schemes, dict) else set()
    places: list[tuple[str, object]] = [
        ("securityRequirements", document.get("securityRequirements"))
    ]
    skills = document.get("skills")
    for index, skill in enumerate(skills if isinstance(skills, list) else []):
        if isinstance(skill, dict):
            places.append(
                (f"skills[{index}].securityRequirements", skill.get("securityRequirements"))
            )
    for where, requirements in places:
        for index, requirement in enumerate(requirements if isinstance(requirements, list) else []):
            names = requirement.get("schemes") if isinstance(requirement, dict) else None
            for name in names if isinstance(names, dict) else {}:
                if name not in declared:
                    notes.add(
                        "error",
                        f"{where}[{index}]",
                        f"requires scheme {name!r}, which securitySchemes does not declare",
                    )


def _protected_header(value: object) -> dict[str, Any]:
    if not isinstance(value, str):
        raise ValueError("the protected header is missing")
    try:
        header = json.loads(base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)))
    except (binascii.Error, ValueError):
        raise ValueError("the protected header is not base64url JSON") from None
    if not isinstance(header, dict):
        raise ValueError("the protected header is not a JSON object")
    return header


def _signatures(document: dict[str, Any], verify: Verify | None, notes: _Notes) -> None:
    signatures = document.get("signatures")
    if not isinstance(signatures, list) or not signatures:
        notes.add("info", "signatures", "the card is not signed")
        return
    for index, entry in enumerate(signatures):
        where = f"signatures[{index}]"
        try:
            header = _protected_header(entry.get("protected") if isinstance(entry, dict) else None)
        except ValueError as exc:
            notes.add("error", where, str(exc))
            continue
        if header.get("alg") not in _ALGORITHMS:
            notes.add("error", where, f"algorithm {header.get('alg')!r} is not an asymmetric one")
        if not header.get("kid"):
            notes.add("warning", where, "no 'kid': a verifier cannot pick the key")
    if verify is None:
        notes.add(
            "info",
            "signatures",
            "signatures not verified: start the inspector with --card-keys JWKS to check them",
        )
        return
    try:
        kid = verify(document)
    except InvalidAgentCardError as exc:
        notes.add("error", "signatures", f"does not verify: {exc}")
        return
    notes.add("ok", "signatures", f"signature verified with trusted key {kid!r}")
