"""The checkpoint coordinator's lifecycle: one small class per state, typed events, pure.

::

    Idle --AttemptStarted--> AttemptRunning --SavepointRequested--> SavepointPending
    SavepointPending --SavepointStarted--> AttemptRunning
    AttemptRunning | SavepointPending --SavepointRequested(stop)--> Stopping
    Stopping --StopSavepointFailed--> AttemptRunning | Idle
    any --AttemptEnded--> Idle (Stopping whose savepoint started stays Stopping)
    any --ShutDown--> Shut (absorbs the ends of attempts and savepoints; all else is illegal)

Each state's :meth:`~CoordinatorState.on` returns the next state or raises
:class:`IllegalCoordinatorTransition` (a bug in the coordinator shell, which asks the state
before it fires: e.g. it refuses a savepoint in Stopping). Frozen; only the JobMaster's loop
fires events. A waiting savepoint's request and future travel in the state that waits for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from undertow.runtime.checkpoint.savepoint import SavepointRequest

F = TypeVar("F")


class IllegalCoordinatorTransition(RuntimeError):
    """An event the coordinator's current state does not allow: a bug in the shell."""


@dataclass(frozen=True, slots=True)
class WaitingSavepoint(Generic[F]):
    """A savepoint that waits for pending checkpoints to end before it triggers."""

    request: SavepointRequest
    #: what gets the savepoint's directory or failure (an ``asyncio.Future[str]`` in the shell)
    future: F


# -- events -----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class AttemptStarted:
    """Every task of an attempt runs; ``periodic``: periodic checkpoints are configured."""

    periodic: bool


@dataclass(frozen=True, slots=True)
class AttemptEnded:
    """The attempt ended (failure, cancel, finish) or the coordinator stops."""


@dataclass(frozen=True, slots=True)
class SavepointRequested(Generic[F]):
    """A savepoint the shell accepted; a stop's savepoint (``request.stop``) ends periodic ones."""

    waiting: WaitingSavepoint[F]


@dataclass(frozen=True, slots=True)
class SavepointStarted:
    """The waiting savepoint was triggered (or failed to, every task having finished)."""


@dataclass(frozen=True, slots=True)
class StopSavepointFailed:
    """A stop's savepoint failed after it was triggered: the job fails over."""


@dataclass(frozen=True, slots=True)
class ShutDown:
    """The job ended; the coordinator decided what to retain."""


CoordinatorEvent = (
    AttemptStarted | AttemptEnded | SavepointRequested[F] | SavepointStarted | StopSavepointFailed
    | ShutDown
)  # fmt: skip


def _illegal(state: object, event: object) -> IllegalCoordinatorTransition:
    return IllegalCoordinatorTransition(
        f"checkpoint coordinator in state {state!r} has no transition for {event!r}"
    )


def _requested(periodic: bool, waiting: WaitingSavepoint[F]) -> CoordinatorState[F]:
    if waiting.request.stop:  # no periodic checkpoint after the sources' EndOfData
        return Stopping(attempt_running=True, periodic=False, pending=waiting)
    return SavepointPending(periodic, waiting)


# -- states -----------------------------------------------------------------------------------
class CoordinatorState(Generic[F]):
    """What every state answers; :meth:`on` is the transition table's row for this state."""

    __slots__ = ()

    # Each state sets all three (a field or a class attribute; no default here, or it
    # would become the default of a subclass's field).
    #: an attempt's tasks all run (savepoints may start unless :attr:`stopping`)
    attempt_running: bool
    #: periodic checkpoints are triggered
    periodic: bool
    #: a stop with savepoint is in progress (or completed): no savepoint may start
    stopping: bool

    @property
    def waiting(self) -> WaitingSavepoint[F] | None:
        """The savepoint that waits to start, if any."""
        return None

    def on(self, event: CoordinatorEvent[F]) -> CoordinatorState[F]:
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class Idle(CoordinatorState[F]):
    """No attempt runs (before the first, between attempts, after a failed stop)."""

    attempt_running = periodic = stopping = False

    def on(self, event: CoordinatorEvent[F]) -> CoordinatorState[F]:
        match event:
            case AttemptStarted(periodic):
                return AttemptRunning(periodic)
            case AttemptEnded():
                return self
            case ShutDown():
                return Shut()
        raise _illegal(self, event)


@dataclass(frozen=True, slots=True)
class AttemptRunning(CoordinatorState[F]):
    """An attempt runs; periodic checkpoints are triggered if ``periodic``."""

    periodic: bool
    attempt_running, stopping = True, False

    def on(self, event: CoordinatorEvent[F]) -> CoordinatorState[F]:
        match event:
            case SavepointRequested(waiting):
                return _requested(self.periodic, waiting)
            case AttemptEnded():
                return Idle()
            case ShutDown():
                return Shut()
        raise _illegal(self, event)


@dataclass(frozen=True, slots=True)
class SavepointPending(CoordinatorState[F]):
    """A savepoint waits for an unaligned checkpoint or another savepoint to end; no periodic
    checkpoint triggers meanwhile (the timer still queues requests if ``periodic``). Only a
    stop's savepoint replaces the waiting one (the shell fails the replaced one's future and
    refuses any other second request)."""

    periodic: bool
    pending: WaitingSavepoint[F]
    attempt_running, stopping = True, False

    @property
    def waiting(self) -> WaitingSavepoint[F] | None:
        return self.pending

    def on(self, event: CoordinatorEvent[F]) -> CoordinatorState[F]:
        match event:
            case SavepointRequested(waiting):
                return _requested(self.periodic, waiting)
            case SavepointStarted():
                return AttemptRunning(self.periodic)
            case AttemptEnded():  # the shell fails the waiting savepoint
                return Idle()
            case ShutDown():
                return Shut()
        raise _illegal(self, event)


@dataclass(frozen=True, slots=True)
class Stopping(CoordinatorState[F]):
    """A stop with savepoint: its savepoint waits (``waiting``), runs or completed. Absorbing
    but for its failure: the attempt ending after the savepoint started leaves Stopping (no
    attempt running; savepoints stay refused). A restart then runs with periodic checkpoints
    as configured, still Stopping (as before this machine existed)."""

    attempt_running: bool
    periodic: bool
    pending: WaitingSavepoint[F] | None
    stopping = True

    @property
    def waiting(self) -> WaitingSavepoint[F] | None:
        return self.pending

    def on(self, event: CoordinatorEvent[F]) -> CoordinatorState[F]:
        match event:
            case SavepointStarted() if self.pending is not None:
                return Stopping(self.attempt_running, self.periodic, None)
            case AttemptEnded() if self.pending is not None:  # the shell fails the savepoint
                return Idle()
            case AttemptEnded():
                return Stopping(False, False, None)
            case AttemptStarted(periodic) if not self.attempt_running:
                return Stopping(True, periodic, None)
            case StopSavepointFailed() if self.pending is None:
                return AttemptRunning(self.periodic) if self.attempt_running else Idle()
            case ShutDown():
                return Shut()
        raise _illegal(self, event)


@dataclass(frozen=True, slots=True)
class Shut(CoordinatorState[F]):
    """The job ended and its checkpoints were retained or deleted. Absorbing: a late end of
    an attempt or a stop's savepoint changes nothing; a start or a savepoint is a bug."""

    attempt_running = periodic = stopping = False

    def on(self, event: CoordinatorEvent[F]) -> CoordinatorState[F]:
        match event:
            case AttemptEnded() | ShutDown() | StopSavepointFailed():
                return self
        raise _illegal(self, event)
