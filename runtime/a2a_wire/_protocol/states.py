"""Task state classes shared by both roles (spec 4.1.3): terminal, interrupted, neither.

A task is *settled* when it is terminal or interrupted: a blocking SendMessage returns and a
stream closes there (spec 3.2.2, 9.4.2); :func:`is_settled` is the one test of it. A state this
version does not know (a newer peer's enum value, ``is_known`` false) is neither terminal nor
interrupted, so no helper ever reads it as finished. The server's transition table
lives in :mod:`a2a_wire._protocol.tasks`; the client only needs these classes.
"""

from __future__ import annotations

from a2a_wire.types import TaskState

__all__ = [
    "INTERRUPTED_STATES",
    "TERMINAL_STATES",
    "is_interrupted",
    "is_settled",
    "is_terminal",
    "state_word",
]

_S = TaskState

TERMINAL_STATES: frozenset[TaskState] = frozenset(
    {_S.COMPLETED, _S.FAILED, _S.CANCELED, _S.REJECTED}
)
"""States a task never leaves (spec 4.1.3)."""

INTERRUPTED_STATES: frozenset[TaskState] = frozenset({_S.INPUT_REQUIRED, _S.AUTH_REQUIRED})
"""States in which the agent waits for the client (spec 3.2.2, 4.1.3)."""


# The tests below look up the member's wire name (a str, hashed in C) rather than the member
# (hashed and compared by Python methods of ProtoEnum, about 1 µs): an unknown state's value is
# never a declared name, so the answers are the same.
_TERMINAL = frozenset(s.value for s in TERMINAL_STATES)
_INTERRUPTED = frozenset(s.value for s in INTERRUPTED_STATES)
_SETTLED = _TERMINAL | _INTERRUPTED


def is_terminal(state: TaskState) -> bool:
    """Whether ``state`` is terminal (COMPLETED, FAILED, CANCELED, REJECTED); False if unknown."""
    return state._value_ in _TERMINAL


def is_interrupted(state: TaskState) -> bool:
    """Whether ``state`` waits for the client (INPUT_REQUIRED, AUTH_REQUIRED); False if unknown."""
    return state._value_ in _INTERRUPTED


def is_settled(state: TaskState) -> bool:
    """Whether ``state`` is terminal or interrupted, where blocking calls and streams stop.

    Spec 3.2.2 (blocking SendMessage) and 9.4.2 (streams); False for a state not known.
    """
    return state._value_ in _SETTLED


_PREFIX = "TASK_STATE_"


def state_word(state: TaskState | None) -> str:
    """How messages name a state: ``TASK_STATE_INPUT_REQUIRED`` as ``input-required``.

    The words of the command line, used by every error message of both roles (machine-readable
    fields keep the wire value). ``None`` is ``unknown``; a name this version does not know is
    written the same way (``TASK_STATE_PAUSED`` as ``paused``), a bare number as it is.
    """
    if state is None:
        return "unknown"
    value = str(state.value)
    if not value.startswith(_PREFIX):
        return value
    return value.removeprefix(_PREFIX).lower().replace("_", "-")
