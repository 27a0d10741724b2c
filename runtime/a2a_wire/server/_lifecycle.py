"""The lifecycle of one agent run, as a table: every run reaches ``ENDED``, and says how.

A run (:class:`~a2a_wire.server._run.Run`) is one ``execute`` call on a task, or one cancel.
Its phase moves only through :func:`advance`, by the steps below; a step the table does not
list for the phase raises and changes nothing. The rules it keeps:

* ``WORKING``: the agent runs and the turn is open; its events are taken.
* ``TURN_ENDED``: an interrupted or terminal state (or a direct Message reply) is committed.
  The caller's turn is over: a follow-up to an interrupted task is accepted from this moment,
  waiting (bounded) for a run that is still unwinding and then superseding it, never refused
  as busy. The agent may still send events until it returns; one that leaves the interrupted
  state opens the turn again (``RESUMED``).
* ``ENDING``: ``execute`` is over but the store could not record how the task ends (the FAILED
  of an agent that failed, or returned early): the runtime retries in the background while
  the run holds its lease; streams and waiting calls have been released with a retryable
  error.
* ``ENDED``: no more events are taken. The lease is released, or left to expire when the
  store cannot be reached; it is never renewed for an ended run.

Each row a phase, each column a step, each cell the next phase (``-`` an illegal step)::

    phase        SETTLED     RESUMED  RETURNED  UNRECORDED  RECORDED  STOPPED
    WORKING      TURN_ENDED  -        ENDED     ENDING      -         ENDED
    TURN_ENDED   TURN_ENDED  WORKING  ENDED     ENDING      -         ENDED
    ENDING       -           -        -         -           ENDED     ENDED
    ENDED        -           -        -         -           -         ENDED

``STOPPED`` covers every way a run is ended from outside: cancelled, its lease lost to another
process, superseded by a follow-up, or the server shutting down; stopping an ended run again
changes nothing. This module has no I/O and no asyncio.
"""

from __future__ import annotations

import enum

__all__ = ["TRANSITIONS", "Phase", "Step", "advance"]


class Phase(enum.Enum):
    """Where a run is in its life (see the module docstring)."""

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
