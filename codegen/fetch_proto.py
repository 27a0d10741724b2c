"""Obtain the pinned ``a2a.proto`` and check its sha256 (``make proto``).

Sources, first that exists wins: ``$A2A_PROTO``; ``../shared/fixtures/a2a.proto``; a download of
``specification/a2a.proto`` from the A2A repository at tag ``v1.0.1``. The file is written to
``fixtures/a2a.proto`` only when its digest matches :data:`codegen.PROTO_SHA256`. Standard library
only, so it runs before any dependency is installed.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import urllib.request
from pathlib import Path

from codegen import PROTO_SHA256, PROTO_URL

SHARED_COPY = Path("..") / "shared" / "fixtures" / "a2a.proto"


class ChecksumError(Exception):
    """The obtained proto is not the pinned one."""


def obtain(source_env: str | None, shared: Path, url: str) -> tuple[bytes, str]:
    """Return the proto's bytes and a description of where they came from.

    Raises:
        OSError: the chosen source cannot be read or downloaded.
    """
    if source_env:
        return Path(source_env).read_bytes(), f"$A2A_PROTO ({source_env})"
    if shared.is_file():
        return shared.read_bytes(), str(shared)
    with urllib.request.urlopen(url, timeout=60) as response:  # noqa: S310 - fixed https URL
        return response.read(), url


def check(data: bytes, origin: str, expected: str = PROTO_SHA256) -> None:
    """Raise :class:`ChecksumError` naming both digests unless ``data`` hashes to ``expected``."""
    actual = hashlib.sha256(data).hexdigest()
    if actual != expected:
        raise ChecksumError(
            f"a2a.proto from {origin} has sha256 {actual}, expected {expected} (A2A v1.0.1)"
        )


def main(argv: list[str] | None = None) -> int:
    """Fetch, check and write the proto; return the process exit code."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("fixtures") / "a2a.proto")
    args = parser.parse_args(argv)
    try:
        data, origin = obtain(os.environ.get("A2A_PROTO"), SHARED_COPY, PROTO_URL)
        check(data, origin)
    except (OSError, ChecksumError) as exc:
        print(f"make proto: {exc}", file=sys.stderr)
        return 1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    if not args.out.is_file() or args.out.read_bytes() != data:
        args.out.write_bytes(data)
    print(f"fixtures/a2a.proto: sha256 {PROTO_SHA256} (from {origin})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
