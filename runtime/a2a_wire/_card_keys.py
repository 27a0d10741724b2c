"""Key material of card signing: private signing keys and trusted public keys (spec 8.4).

Both load a JWK (JSON text or mapping) or a PEM. Public names are re-exported by
:mod:`a2a_wire.card_signing`, which documents how the keys are used; import them from there.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jwcrypto import jwk
from jwcrypto.common import JWException

__all__ = ["ALGORITHMS", "SigningKey", "TrustedKeys"]

ALGORITHMS = ("ES256", "ES384", "ES512", "RS256", "RS384", "RS512", "PS256", "PS384", "PS512")
"""JWS algorithms accepted for cards: asymmetric only, so a public key can never sign."""

_DEFAULT_ALG = {("EC", "P-256"): "ES256", ("EC", "P-384"): "ES384", ("EC", "P-521"): "ES512"}


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
