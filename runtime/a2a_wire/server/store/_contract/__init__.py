"""What every task store promises: the protocols, their value types and the store's one error.

The modules here import nothing of the backends; :mod:`a2a_wire.server.store` re-exports them.
"""
