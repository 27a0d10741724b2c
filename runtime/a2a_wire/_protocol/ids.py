"""Random identifiers for tasks, contexts, messages and artifacts (spec 3.4.1, 3.4.2).

:func:`new_uuid` gives the same text as ``str(uuid.uuid4())`` (a version 4, RFC 4122 variant
UUID in lower-case canonical form, from ``os.urandom``) in well under half the time: it formats
the hex digits directly instead of building a :class:`uuid.UUID`. The server makes several per
request, where the difference showed in its profile.
"""

from __future__ import annotations

import os

__all__ = ["new_uuid"]

# The variant nibble is 10xx in binary: keep the random low two bits and set the high one.
_VARIANT = {f"{n:x}": f"{(n & 0x3) | 0x8:x}" for n in range(16)}


def new_uuid() -> str:
    """A fresh random UUID (version 4) as text, e.g. ``"1b4e28ba-2fa1-41d2-883f-0016d3cca427"``."""
    h = os.urandom(16).hex()
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{_VARIANT[h[16]]}{h[17:20]}-{h[20:]}"
