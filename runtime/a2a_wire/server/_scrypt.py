"""Salted scrypt hashes of API keys and bearer tokens (standard library :func:`hashlib.scrypt`).

A hash is the PHC string ``$scrypt$ln=<log2 N>,r=<r>,p=<p>$<salt>$<digest>`` (standard base64
without padding, a 16-byte random salt, a 32-byte digest). Checking recomputes the digest with
the stored parameters and compares with :func:`hmac.compare_digest`. Used by
:mod:`a2a_wire.server._auth`, which re-exports :func:`hash_secret` and :func:`verify_secret`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass

__all__ = ["ScryptHash", "hash_secret", "verify_secret"]

_PHC = re.compile(
    r"\$scrypt\$ln=(\d{1,2}),r=(\d{1,2}),p=(\d{1,2})\$([A-Za-z0-9+/]+)\$([A-Za-z0-9+/]+)\Z"
)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii").rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)


def _in_range(log2_n: int, r: int, p: int) -> bool:
    return 1 <= log2_n <= 20 and 1 <= r <= 32 and 1 <= p <= 16


def _scrypt(secret: str, salt: bytes, log2_n: int, r: int, p: int, size: int) -> bytes:
    n = 1 << log2_n
    maxmem = 128 * r * n * p + 128 * r * (n + p + 2) + (1 << 20)
    return hashlib.scrypt(
        secret.encode("utf-8"), salt=salt, n=n, r=r, p=p, dklen=size, maxmem=maxmem
    )


def hash_secret(secret: str, *, log2_n: int = 14, r: int = 8, p: int = 1) -> str:
    """Hash an API key or bearer token for a :class:`a2a_wire.server._auth.RegisteredClient`.

    Args:
        secret: The credential; it should be long and random (e.g. ``secrets.token_urlsafe()``).
        log2_n: scrypt cost exponent (``N = 2**log2_n``); 14 costs about 16 MiB and a few tens
            of milliseconds. Lower values are for tests only.
        r: scrypt block size.
        p: scrypt parallelism.

    Returns:
        The PHC string ``$scrypt$ln=..,r=..,p=..$<salt>$<hash>`` (base64, no padding).

    Raises:
        ValueError: empty secret or parameters out of range.
    """
    if not secret:
        raise ValueError("cannot hash an empty secret")
    if not _in_range(log2_n, r, p):
        raise ValueError("scrypt parameters out of range")
    salt = secrets.token_bytes(16)
    digest = _scrypt(secret, salt, log2_n, r, p, 32)
    return f"$scrypt$ln={log2_n},r={r},p={p}${_b64(salt)}${_b64(digest)}"


@dataclass(frozen=True, slots=True)
class ScryptHash:
    """A parsed hash string (see the module docstring)."""

    log2_n: int
    r: int
    p: int
    salt: bytes
    digest: bytes

    @classmethod
    def parse(cls, text: str) -> ScryptHash:
        """Read a string made by :func:`hash_secret`.

        Raises:
            ValueError: the string is not such a hash.
        """
        match = _PHC.match(text)
        if match is None:
            raise ValueError("not a $scrypt$ hash made by hash_secret")
        log2_n, r, p = int(match[1]), int(match[2]), int(match[3])
        try:
            salt, digest = _unb64(match[4]), _unb64(match[5])
        except (binascii.Error, ValueError):
            raise ValueError("the salt or digest of the hash is not base64") from None
        if not _in_range(log2_n, r, p) or len(digest) < 16:
            raise ValueError("scrypt parameters out of range")
        return cls(log2_n, r, p, salt, digest)

    def matches(self, secret: str) -> bool:
        """Whether ``secret`` hashes to this digest (constant-time comparison)."""
        computed = _scrypt(secret, self.salt, self.log2_n, self.r, self.p, len(self.digest))
        return hmac.compare_digest(computed, self.digest)


def verify_secret(secret: str, hashed: str) -> bool:
    """Whether ``secret`` is the credential ``hashed`` was made from (constant-time compare).

    Args:
        secret: The presented value.
        hashed: A string from :func:`hash_secret`.

    Returns:
        ``True`` on a match.

    Raises:
        ValueError: ``hashed`` is not a hash made by :func:`hash_secret`.
    """
    return ScryptHash.parse(hashed).matches(secret)
