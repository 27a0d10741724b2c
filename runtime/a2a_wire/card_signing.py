"""Signed agent cards: JWS over the RFC 8785 canonical card (spec 8.4). Needs the ``signing`` extra.

:class:`CardVerifier` checks the card's JSON object as received, not a re-encoding, so fields
this version does not know still count; trust comes from the configured keys alone (``jku`` is
never fetched). The key classes are defined in ``a2a_wire._card_keys`` and re-exported here;
import them from this module. Details: docs/internals/protocol.md.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

import rfc8785
from jwcrypto import jws
from jwcrypto.common import JWException

from a2a_wire import codec
from a2a_wire._card_keys import ALGORITHMS, SigningKey, TrustedKeys
from a2a_wire.errors import CardSignatureError
from a2a_wire.types import AgentCard, AgentCardSignature

__all__ = [
    "ALGORITHMS",
    "CardSignatureError",
    "CardSigner",
    "CardVerifier",
    "SigningKey",
    "TrustedKeys",
    "canonical_card",
]

log = logging.getLogger("a2a_wire.card_signing")


def canonical_card(document: Mapping[str, Any]) -> bytes:
    """The signed bytes of a card: RFC 8785 JSON of the object without ``signatures``.

    Args:
        document: The card's JSON object (presence rules of spec 8.4.1 already applied).

    Returns:
        The canonical UTF-8 bytes.
    """
    return rfc8785.dumps({k: v for k, v in document.items() if k != "signatures"})


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


class CardSigner:
    """Signs cards with one or more keys (several during a key rotation).

    Args:
        keys: The signing keys; kids must be distinct.

    Raises:
        ValueError: no keys, or a repeated kid.
    """

    def __init__(self, keys: Sequence[SigningKey]) -> None:
        if not keys:
            raise ValueError("a card signer needs at least one key")
        if len({k.kid for k in keys}) != len(keys):
            raise ValueError("signing keys need distinct kids")
        self.keys = tuple(keys)

    def sign(self, document: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The ``signatures`` array for a card's JSON object (existing signatures ignored).

        Args:
            document: The card as served (presence rules applied).

        Returns:
            One ``{"protected", "signature"}`` object per key.
        """
        payload = canonical_card(document)
        out: list[dict[str, Any]] = []
        for key in self.keys:
            header: dict[str, str] = {"alg": key.alg, "kid": key.kid, "typ": "JOSE"}
            if key.jku:
                header["jku"] = key.jku
            token = jws.JWS(payload)
            token.allowed_algs = [key.alg]
            token.add_signature(key.key, alg=None, protected=json.dumps(header))
            signed = json.loads(token.serialize())
            out.append({"protected": signed["protected"], "signature": signed["signature"]})
        return out

    def sign_card(self, card: AgentCard) -> AgentCard:
        """A copy of ``card`` whose ``signatures`` are this signer's.

        Args:
            card: The card exactly as it will be served.

        Returns:
            The signed copy.
        """
        document = card.to_dict()
        signed = AgentCard.from_dict(document)
        signed.signatures = [AgentCardSignature.from_dict(s) for s in self.sign(document)]
        return signed

    def jwks(self) -> dict[str, Any]:
        """The public keys as a JWKS document ``{"keys": [...]}`` (for ``jku`` or clients)."""
        return {"keys": [key.public_jwk() for key in self.keys]}


def _header(protected: object) -> dict[str, Any]:
    if not isinstance(protected, str):
        raise ValueError("protected header missing")
    try:
        raw = base64.urlsafe_b64decode(protected + "=" * (-len(protected) % 4))
        header = json.loads(raw)
    except (binascii.Error, ValueError):
        raise ValueError("protected header is not base64url JSON") from None
    if not isinstance(header, dict):
        raise ValueError("protected header is not a JSON object")
    return header


class CardVerifier:
    """Checks card signatures against trusted keys (docs/internals/protocol.md).

    Args:
        trusted: The keys to trust.
        required: Refuse cards without a valid signature; when ``False`` a failure is only
            logged.
        algorithms: Accepted ``alg`` values (a subset of :data:`ALGORITHMS`).
    """

    def __init__(
        self,
        trusted: TrustedKeys,
        *,
        required: bool = True,
        algorithms: Sequence[str] = ALGORITHMS,
    ) -> None:
        self.trusted = trusted
        self.required = required
        self.algorithms = tuple(a for a in algorithms if a in ALGORITHMS)

    def verify(self, document: Mapping[str, Any]) -> str | None:
        """Verify a received card's JSON object.

        Args:
            document: The card as received.

        Returns:
            The ``kid`` of the first signature that verified, or ``None`` when none did and
            verification is not required.

        Raises:
            CardSignatureError: verification is required and no signature verified.
        """
        signatures = document.get("signatures")
        reasons: list[str] = []
        if not isinstance(signatures, list) or not signatures:
            reasons.append("the card has no signatures")
        else:
            payloads = self._payloads(document)
            for index, entry in enumerate(signatures):
                try:
                    return self._check(entry, payloads)
                except ValueError as exc:
                    reasons.append(f"signature {index}: {exc}")
        if self.required:
            raise CardSignatureError(reasons)
        log.warning("agent card signature not verified: %s", "; ".join(reasons))
        return None

    @staticmethod
    def _payloads(document: Mapping[str, Any]) -> list[bytes]:
        payloads = [canonical_card(document)]
        try:
            normal = canonical_card(AgentCard.from_dict(dict(document)).to_dict())
        except codec.DecodeError:
            return payloads
        if normal != payloads[0]:
            payloads.append(normal)
        return payloads

    def _check(self, entry: object, payloads: Sequence[bytes]) -> str:
        if not isinstance(entry, Mapping):
            raise ValueError("not an object")
        protected, signature = entry.get("protected"), entry.get("signature")
        header = _header(protected)
        alg, kid = header.get("alg"), header.get("kid")
        if "crit" in header or "b64" in header:
            raise ValueError("protected header uses crit or b64, which are not supported")
        if alg not in self.algorithms:
            raise ValueError(f"algorithm {str(alg)[:20]!r} is not accepted")
        if not isinstance(kid, str) or not kid:
            raise ValueError("protected header has no kid")
        key = self.trusted.get(kid)
        if key is None:
            raise ValueError(f"key id {kid[:64]!r} is not trusted")
        if not isinstance(signature, str):
            raise ValueError("signature missing")
        for payload in payloads:
            token = jws.JWS()
            token.allowed_algs = [alg]
            flat = {"payload": _b64url(payload), "protected": protected, "signature": signature}
            try:
                token.deserialize(json.dumps(flat))
                token.verify(key, alg=alg)
            except JWException:
                continue
            return kid
        raise ValueError(f"does not match the card (altered, or not signed by key {kid[:64]!r})")
