"""Signed agent cards: JWS over the RFC 8785 canonical card (spec 8.4). Needs the ``signing`` extra.

Signing (spec 8.4.1, 8.4.2)
---------------------------
The payload is the card's JSON object without ``signatures``, serialised with the JSON
Canonicalization Scheme (RFC 8785, the ``rfc8785`` package). The object must follow the presence
rules of spec 8.4.1; the codec's ``to_dict`` already does (REQUIRED fields always written, unset
optional fields left out, other fields left out at their default), and so does the served card.
Each :class:`SigningKey` adds one entry ``{"protected", "signature"}`` to ``signatures``: a JWS
(RFC 7515, via ``jwcrypto``) with a detached payload whose protected header holds ``alg``,
``kid``, ``typ: "JOSE"`` and, when configured, ``jku``. Several keys give several signatures,
which is how keys are rotated: publish with old and new key, then drop the old one.

Verification (spec 8.4.3)
-------------------------
:class:`CardVerifier` canonicalises the card **as received** (the JSON object minus
``signatures``, not a re-encoding, so fields unknown to this version still count), and also the
decoded card's own encoding (so a signer that wrote a default value the presence rules drop
still verifies; that form is exactly what the client acts on). A card is trusted when one
signature verifies with a key from :class:`TrustedKeys` found by its ``kid``. Only asymmetric
algorithms are accepted (:data:`ALGORITHMS`); ``jku`` is never fetched: trust comes from the
configured keys alone, and a key is revoked by removing it. A header with ``crit`` or ``b64`` is
refused. Failures name the reason for every signature tried (:class:`CardSignatureError`).
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import rfc8785
from jwcrypto import jwk, jws
from jwcrypto.common import JWException

from a2a_wire import codec
from a2a_wire.errors import InvalidAgentCardError
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

ALGORITHMS = ("ES256", "ES384", "ES512", "RS256", "RS384", "RS512", "PS256", "PS384", "PS512")
"""JWS algorithms accepted for cards: asymmetric only, so a public key can never sign."""

_DEFAULT_ALG = {("EC", "P-256"): "ES256", ("EC", "P-384"): "ES384", ("EC", "P-521"): "ES512"}


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


def _load_jwk(value: Mapping[str, Any] | str | bytes) -> jwk.JWK:
    if isinstance(value, Mapping):
        return jwk.JWK(**dict(value))
    data = value.encode() if isinstance(value, str) else value
    if data.lstrip().startswith(b"-----BEGIN"):
        return jwk.JWK.from_pem(data)
    return jwk.JWK.from_json(data)


@dataclass(frozen=True)
class SigningKey:
    """A private key that signs cards.

    Attributes:
        key: The private JWK.
        kid: The key id put in the protected header (and in the published JWKS).
        alg: The JWS algorithm (one of :data:`ALGORITHMS`).
        jku: Optional URL of a JWKS holding the public key, put in the protected header.
    """

    key: jwk.JWK
    kid: str
    alg: str
    jku: str = ""

    def __post_init__(self) -> None:
        """Check the key and algorithm.

        Raises:
            ValueError: no kid, a public key, or an algorithm not in :data:`ALGORITHMS`.
        """
        if not self.kid:
            raise ValueError("a signing key needs a kid")
        if not self.key.has_private:
            raise ValueError(f"key {self.kid!r} is public; signing needs the private key")
        if self.alg not in ALGORITHMS:
            raise ValueError(f"algorithm {self.alg!r} is not one of {', '.join(ALGORITHMS)}")

    @classmethod
    def load(
        cls,
        key: Mapping[str, Any] | str | bytes,
        kid: str,
        *,
        alg: str = "",
        jku: str = "",
    ) -> SigningKey:
        """A signing key from a PEM (PKCS#8 or traditional) or a JWK (JSON text or mapping).

        Args:
            key: The private key material.
            kid: Its key id.
            alg: The algorithm; by default ES256/ES384/ES512 by curve, RS256 for RSA.
            jku: Optional JWKS URL for the protected header.

        Returns:
            The key.

        Raises:
            ValueError: the material is not a private key, or no algorithm fits it.
        """
        try:
            loaded = _load_jwk(key)
        except (JWException, ValueError, TypeError) as exc:
            raise ValueError(f"key {kid!r} could not be loaded: {type(exc).__name__}") from None
        return cls(loaded, kid, alg or cls._default_alg(loaded, kid), jku)

    @classmethod
    def generate(cls, kid: str, alg: str = "ES256", *, jku: str = "") -> SigningKey:
        """A fresh key (ES256: P-256; RS256/PS256: RSA 2048), e.g. for tests and development.

        Args:
            kid: Its key id.
            alg: ``ES256``, ``ES384``, ``ES512``, or an RSA algorithm.
            jku: Optional JWKS URL for the protected header.

        Returns:
            The key.
        """
        curves = {"ES256": "P-256", "ES384": "P-384", "ES512": "P-521"}
        if alg in curves:
            key = jwk.JWK.generate(kty="EC", crv=curves[alg])
        else:
            key = jwk.JWK.generate(kty="RSA", size=2048)
        return cls(key, kid, alg, jku)

    @staticmethod
    def _default_alg(key: jwk.JWK, kid: str) -> str:
        kty = key.get("kty")
        if kty == "RSA":
            return "RS256"
        alg = _DEFAULT_ALG.get((kty, key.get("crv")))
        if alg is None:
            raise ValueError(f"key {kid!r}: no default algorithm for this key type; pass alg")
        return alg

    def public_jwk(self) -> dict[str, Any]:
        """The public half as a JWK object, with ``kid``, ``alg`` and ``use: sig``."""
        public: dict[str, Any] = self.key.export_public(as_dict=True)
        public.update(kid=self.kid, alg=self.alg, use="sig")
        return public


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


class TrustedKeys:
    """Public keys a client trusts to sign cards, by ``kid``.

    Args:
        keys: kid -> public key.
    """

    def __init__(self, keys: Mapping[str, jwk.JWK]) -> None:
        self._keys = dict(keys)

    @classmethod
    def from_jwks(cls, jwks: Mapping[str, Any] | str | bytes) -> TrustedKeys:
        """Keys from a JWKS document; each key needs a ``kid``.

        Args:
            jwks: The JWKS as a mapping or JSON text.

        Returns:
            The trusted keys.

        Raises:
            ValueError: not a JWKS, a key without ``kid``, or a key that does not load.
        """
        document = json.loads(jwks) if isinstance(jwks, str | bytes) else jwks
        entries = document.get("keys") if isinstance(document, Mapping) else None
        if not isinstance(entries, list):
            raise ValueError("a JWKS is an object with a 'keys' array")
        keys: dict[str, jwk.JWK] = {}
        for entry in entries:
            if not isinstance(entry, Mapping) or not isinstance(entry.get("kid"), str):
                raise ValueError("every key of the JWKS needs a 'kid'")
            keys[entry["kid"]] = cls._public(entry, entry["kid"])
        return cls(keys)

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> TrustedKeys:
        """Keys from a JWKS file.

        Raises:
            ValueError: the file is not a usable JWKS.
            OSError: the file cannot be read.
        """
        return cls.from_jwks(Path(path).read_bytes())

    @classmethod
    def from_mapping(cls, keys: Mapping[str, Mapping[str, Any] | str | bytes]) -> TrustedKeys:
        """Keys from kid -> JWK (mapping or JSON text) or PEM public key.

        Raises:
            ValueError: a key does not load.
        """
        return cls({kid: cls._public(value, kid) for kid, value in keys.items()})

    @staticmethod
    def _public(value: Mapping[str, Any] | str | bytes, kid: str) -> jwk.JWK:
        try:
            loaded = _load_jwk(value)
        except (JWException, ValueError, TypeError) as exc:
            raise ValueError(
                f"trusted key {kid!r} could not be loaded: {type(exc).__name__}"
            ) from None
        return loaded.public() if loaded.has_private else loaded

    def get(self, kid: str) -> jwk.JWK | None:
        """The key with this id, if trusted."""
        return self._keys.get(kid)

    def __len__(self) -> int:
        return len(self._keys)


class CardSignatureError(InvalidAgentCardError):
    """A card's signatures do not establish trust; ``reasons`` says why, per signature.

    Attributes:
        reasons: One text per signature tried (or the single reason there were none).
    """

    def __init__(self, reasons: Sequence[str]) -> None:
        self.reasons = tuple(reasons)
        super().__init__("agent card signature not verified: " + "; ".join(self.reasons))


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
    """Checks card signatures against trusted keys (module docstring).

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
