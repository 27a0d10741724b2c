"""The JSON-RPC method table of the A2A service (generated from the proto)."""

from a2a_wire._generated.methods import *  # noqa: F403 - the generated module's __all__ is the API
from a2a_wire._generated.methods import __all__ as _generated_all

__all__ = list(_generated_all)
