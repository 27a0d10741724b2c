"""The lifecycle of one agent run, as a table: every run reaches ``ENDED``, and says how.

A run's phase moves only through :func:`advance` by :data:`TRANSITIONS`; a step the table does
not list for the phase raises and changes nothing. The phases and steps are explained in
docs/internals/server.md ("The lifecycle of a run"). No I/O and no asyncio.
"""

from __future__ import annotations

import enum

__all__ = ["TRANSITIONS", "Phase", "Step", "advance"]


class Phase(enum.Enum):
    """Where a run is in its life (docs/internals/server.md)."""

    WORKING = "working"
    TURN_ENDED = "turn-ended"
    ENDING = "ending"
    ENDED = "ended"


class Step(enum.Enum):
    """What happened to a run."""

    SETTLED = "settled"
    """An interrupted or terminal state, or a direct reply, is committed."""
    RESUMED = "resumed"
    """After its turn ended, the agent's event moved the task out of the interrupted state."""
    RETURNED = "returned"
    """``execute`` returned or failed, and nothing is left to record."""
    UNRECORDED = "unrecorded"
    """``execute`` returned or failed, and recording the task's end failed (store unavailable)."""
    RECORDED = "recorded"
    """The end left unrecorded is recorded now."""
    STOPPED = "stopped"
    """Ended from outside: cancelled, lease lost, superseded by a follow-up, shutdown."""


TRANSITIONS: dict[Phase, dict[Step, Phase]] = {
    Phase.WORKING: {
        Step.SETTLED: Phase.TURN_ENDED,
        Step.RETURNED: Phase.ENDED,
        Step.UNRECORDED: Phase.ENDING,
        Step.STOPPED: Phase.ENDED,
    },
    Phase.TURN_ENDED: {
        Step.SETTLED: Phase.TURN_ENDED,
        Step.RESUMED: Phase.WORKING,
        Step.RETURNED: Phase.ENDED,
        Step.UNRECORDED: Phase.ENDING,
        Step.STOPPED: Phase.ENDED,
    },
    Phase.ENDING: {Step.RECORDED: Phase.ENDED, Step.STOPPED: Phase.ENDED},
    Phase.ENDED: {Step.STOPPED: Phase.ENDED},
}
"""Phase -> step -> next phase; a missing pair is an illegal step."""


def advance(phase: Phase, step: Step) -> Phase:
    """The phase after ``step``.

    Raises:
        RuntimeError: ``step`` is not allowed in ``phase`` (a bug in the runtime, never the
            agent's).
    """
    after = TRANSITIONS[phase].get(step)
    if after is None:
        raise RuntimeError(f"a run cannot take step {step.value} while {phase.value}")
    return after
