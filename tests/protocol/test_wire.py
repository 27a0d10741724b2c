"""Tests for the shared wire rules (a2a_wire._protocol.wire): versions, headers, media types.

The server's reading of ``A2A-Version`` is pinned over HTTP in tests/functional/test_server_jsonrpc.py
and test_server_input_rules.py, the client's reading of a card's ``protocolVersion`` in
tests/runtime/test_client_card.py; here the two rules are checked without I/O, side by side.
"""

from __future__ import annotations

import pytest

import a2a_wire
from a2a_wire._protocol import wire
from a2a_wire._protocol.wire import (
    check_version,
    join_extensions,
    parse_extensions,
    version_matches,
)
from a2a_wire.errors import VersionNotSupportedError


def test_the_package_re_exports_the_one_protocol_version() -> None:
    assert a2a_wire.PROTOCOL_VERSION is wire.PROTOCOL_VERSION == "1.0"
    assert wire.SUPPORTED_VERSIONS == (wire.PROTOCOL_VERSION,)
    with pytest.raises(AttributeError):
        a2a_wire.NO_SUCH_NAME  # noqa: B018


@pytest.mark.parametrize(
    ("value", "served", "card_fits"),
    [
        ("1.0", True, True),
        ("1.0.3", True, True),
        (" 1.0 ", True, True),
        ("1.00", False, True),  # the header is read strictly, a card leniently
        ("01.0", False, True),
        ("1.0.x", False, True),
        ("1.0.01", False, True),
        ("1.0-beta", False, False),
        ("0.3", False, False),
        ("1.1", False, False),
        ("1", False, False),
        ("v1.0", False, False),
        ("", False, False),
    ],
)
def test_the_two_version_readings(value: str, served: bool, card_fits: bool) -> None:
    assert (check_version(value) is None) is served
    assert version_matches(value) is card_fits


@pytest.mark.parametrize("value", [None, "", "   "])
def test_an_absent_version_means_0_3(value: str | None) -> None:
    refusal = check_version(value)
    assert isinstance(refusal, VersionNotSupportedError)
    assert refusal.code == -32009
    assert "'0.3'" in str(refusal)


@pytest.mark.parametrize(
    ("header", "uris"),
    [
        (None, ()),
        ("", ()),
        ("urn:a", ("urn:a",)),
        (" urn:a , urn:b,,urn:a ", ("urn:a", "urn:b", "urn:a")),
        (" , ", ()),
    ],
)
def test_parse_extensions(header: str | None, uris: tuple[str, ...]) -> None:
    assert parse_extensions(header) == uris


def test_join_extensions_is_read_back_by_parse() -> None:
    uris = ("https://ext.example/a", "urn:x:b")
    assert parse_extensions(join_extensions(uris)) == uris


def test_json_media_types() -> None:
    assert wire.JSON_MEDIA_TYPES == ("application/json", "application/a2a+json")
    assert wire.PUSH_CONTENT_TYPE in wire.JSON_MEDIA_TYPES


def test_all_is_sorted_and_complete() -> None:
    assert wire.__all__ == sorted(wire.__all__)
    public = {name for name in vars(wire) if not name.startswith("_") and name.isidentifier()}
    assert set(wire.__all__) == public - {
        "annotations",
        "re",
        "Sequence",
        "VersionNotSupportedError",
        "yarl",
    }
