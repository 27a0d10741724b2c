"""The A2A value classes: one per message and enum of ``lf.a2a.v1`` (generated from the proto).

Construct them with keywords (``Part(text="hi")``), compare them by value, and convert them with
``from_dict`` / ``to_dict`` or, for JSON text, with :mod:`a2a_wire.codec`.
"""

from a2a_wire._generated.types import *  # noqa: F403 - the generated module's __all__ is the API
from a2a_wire._generated.types import __all__ as _generated_all

__all__ = list(_generated_all)
