"""Task state classes shared by both roles (spec 4.1.3): terminal, interrupted, neither.

A state this version does not know (a newer peer's enum value, ``is_known`` false) is neither
terminal nor interrupted, so no helper ever reads it as finished. The server's transition table
lives in :mod:`a2a_wire._protocol.tasks`; the client only needs these classes.
"""

from __future__ import annotations

from a2a_wire.types import TaskState

__all__ = ["INTERRUPTED_STATES", "TERMINAL_STATES", "ends_stream", "is_interrupted", "is_terminal"]

_S = TaskState

TERMINAL_STATES: frozenset[TaskState] = frozenset(
    {_S.COMPLETED, _S.FAILED, _S.CANCELED, _S.REJECTED}
)
"""States a task never leaves (spec 4.1.3)."""

INTERRUPTED_STATES: frozenset[TaskState] = frozenset({_S.INPUT_REQUIRED, _S.AUTH_REQUIRED})
"""States in which the agent waits for the client (spec 3.2.2, 4.1.3)."""


def is_terminal(state: TaskState) -> bool:
    """Whether ``state`` is terminal (COMPLETED, FAILED, CANCELED, REJECTED); False if unknown."""
    return state in TERMINAL_STATES


def is_interrupted(state: TaskState) -> bool:
    """Whether ``state`` waits for the client (INPUT_REQUIRED, AUTH_REQUIRED); False if unknown."""
    return state in INTERRUPTED_STATES


def ends_stream(state: TaskState) -> bool:
    """Whether a blocking call or a stream stops at ``state``: terminal or interrupted (spec 3.2.2)."""
    return state in TERMINAL_STATES or state in INTERRUPTED_STATES
