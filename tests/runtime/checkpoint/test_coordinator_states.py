"""The checkpoint coordinator's lifecycle machine: its transitions, the illegal ones, and
(Hypothesis) that a shell obeying its guards never meets an illegal transition and sees the
same mode the flags it replaced had (``_active``, ``_running``, ``stopping``, the waiting
savepoint)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from undertow.runtime.checkpoint.coordinator_states import (
    AttemptEnded,
    AttemptRunning,
    AttemptStarted,
    CoordinatorEvent,
    CoordinatorState,
    Idle,
    IllegalCoordinatorTransition,
    SavepointPending,
    SavepointRequested,
    SavepointStarted,
    Shut,
    ShutDown,
    Stopping,
    StopSavepointFailed,
    WaitingSavepoint,
)
from undertow.runtime.checkpoint.savepoint import SavepointRequest

State = CoordinatorState[str]


def waiting(stop: bool, name: str = "f") -> WaitingSavepoint[str]:
    return WaitingSavepoint(SavepointRequest("/tmp/sp", stop=stop), name)


def test_a_savepoint_waits_then_runs_beside_periodic_checkpoints() -> None:
    state: State = Idle().on(AttemptStarted(periodic=True))
    assert state == AttemptRunning(True) and state.attempt_running and state.periodic
    state = state.on(SavepointRequested(waiting(stop=False)))
    assert isinstance(state, SavepointPending) and state.waiting == waiting(stop=False)
    assert state.periodic and not state.stopping
    assert state.on(SavepointStarted()) == AttemptRunning(True)
    assert state.on(AttemptEnded()) == Idle()


def test_a_stop_ends_periodic_checkpoints_and_refuses_to_be_left_but_by_its_failure() -> None:
    running: State = AttemptRunning(True)
    state = running.on(SavepointRequested(waiting(stop=True)))
    assert state == Stopping(True, False, waiting(stop=True)) and state.stopping
    state = state.on(SavepointStarted())
    assert state == Stopping(True, False, None) and state.waiting is None
    with pytest.raises(IllegalCoordinatorTransition, match=r"Stopping.*SavepointRequested"):
        state.on(SavepointRequested(waiting(stop=False)))
    with pytest.raises(IllegalCoordinatorTransition):
        state.on(AttemptStarted(True))  # the attempt still runs
    assert state.on(StopSavepointFailed()) == AttemptRunning(False)  # the job fails over next
    ended = state.on(AttemptEnded())
    assert ended == Stopping(False, False, None) and not ended.attempt_running
    assert ended.on(StopSavepointFailed()) == Idle()
    assert ended.on(ShutDown()) == Shut()


def test_a_waiting_stop_is_dropped_with_the_attempt() -> None:
    state: State = Stopping(True, False, waiting(stop=True))
    assert state.on(AttemptEnded()) == Idle()
    with pytest.raises(IllegalCoordinatorTransition):
        state.on(StopSavepointFailed())  # its savepoint never started


def test_shut_absorbs_the_end_and_refuses_a_new_start() -> None:
    shut: State = Shut()
    for event in (AttemptEnded(), ShutDown(), StopSavepointFailed()):
        assert shut.on(event) == Shut()
    for bad in (AttemptStarted(True), SavepointRequested(waiting(False)), SavepointStarted()):
        with pytest.raises(IllegalCoordinatorTransition, match="Shut"):
            shut.on(bad)


def test_idle_refuses_savepoints_and_a_running_attempt_refuses_a_second_start() -> None:
    idle: State = Idle()
    running: State = AttemptRunning(False)
    with pytest.raises(IllegalCoordinatorTransition, match="Idle"):
        idle.on(SavepointRequested(waiting(False)))
    with pytest.raises(IllegalCoordinatorTransition, match="AttemptRunning"):
        running.on(AttemptStarted(False))


# -- property: the shell's guards, the old flags ---------------------------------------------
@dataclass
class Flags:
    """The coordinator's flags before the machine, changed as its methods changed them."""

    active: bool = False
    running: bool = False
    stopping: bool = False
    waiting: WaitingSavepoint[str] | None = None
    #: a triggered stop savepoint is pending (the old code knew it from its pending map)
    stop_pending: bool = False
    shut: bool = False


class GuardedShell(RuleBasedStateMachine):
    """Drives the machine as the coordinator shell does, each rule only when the shell would
    fire its event (its guards are the preconditions), beside :class:`Flags` changed as the
    old code changed them. After every step the machine's answers equal the flags."""

    def __init__(self) -> None:
        super().__init__()
        self.flags = Flags()
        self.state: State = Idle()
        self.requests = 0

    def _stop(self) -> None:
        """``stop()``: the attempt ends; a triggered stop savepoint is aborted with it."""
        flags, waiting_before = self.flags, self.flags.waiting
        self.state = self.state.on(AttemptEnded())
        flags.active = flags.running = False
        flags.waiting = None
        if flags.stop_pending:
            flags.stop_pending = flags.stopping = False
            self.state = self.state.on(StopSavepointFailed())
        if waiting_before is not None:
            flags.stopping = False

    @precondition(lambda self: not self.flags.shut and not self.flags.active)
    @rule(periodic=st.booleans())
    def start(self, periodic: bool) -> None:  # the JobMaster starts an attempt after a stop
        self.state = self.state.on(AttemptStarted(periodic))
        self.flags.active = True
        self.flags.running = self.flags.running or periodic

    @rule()
    def stop(self) -> None:  # the JobMaster stops after every attempt, started or not
        if self.flags.shut:
            self.state = self.state.on(AttemptEnded())
        else:
            self._stop()

    @precondition(lambda self: self.flags.active and not self.flags.stopping)
    @rule(stop=st.booleans())
    def savepoint(self, stop: bool) -> None:  # else ``trigger_savepoint`` refuses it
        self.requests += 1
        request = waiting(stop=stop, name=f"f{self.requests}")
        self.state = self.state.on(SavepointRequested(request))
        self.flags.waiting = request
        if stop:
            self.flags.stopping, self.flags.running = True, False

    @precondition(lambda self: self.flags.waiting is not None)
    @rule(triggered=st.booleans())  # False: every task had finished
    def start_waiting(self, triggered: bool) -> None:
        waiting_savepoint = self.flags.waiting
        assert waiting_savepoint is not None
        self.state = self.state.on(SavepointStarted())
        self.flags.stop_pending = waiting_savepoint.request.stop and triggered
        self.flags.waiting = None

    @precondition(lambda self: self.flags.stop_pending)
    @rule()
    def stop_savepoint_failed(self) -> None:
        before = self.state
        self.state = self.state.on(StopSavepointFailed())
        self.flags.stop_pending = self.flags.stopping = False
        assert isinstance(before, Stopping)

    @precondition(lambda self: self.flags.stop_pending)
    @rule()
    def stop_savepoint_completed(self) -> None:
        self.flags.stop_pending = False  # the job is to finish: still stopping

    @precondition(lambda self: not self.flags.shut)
    @rule()
    def shutdown(self) -> None:
        self._stop()
        self.state = self.state.on(ShutDown())
        self.flags.shut = True

    @invariant()
    def the_machine_answers_as_the_flags_did(self) -> None:
        flags, state = self.flags, self.state
        if flags.shut:
            assert state == Shut()
            return
        assert (state.attempt_running, state.periodic, state.stopping, state.waiting) == (
            flags.active,
            flags.running,
            flags.stopping,
            flags.waiting,
        ), state


GuardedShell.TestCase.settings = settings(
    max_examples=150, stateful_step_count=25, deadline=None, derandomize=True
)
test_a_guarded_shell_never_meets_an_illegal_transition_and_keeps_the_old_flags = (
    GuardedShell.TestCase
)


EVENTS: st.SearchStrategy[CoordinatorEvent[str]] = st.one_of(
    st.builds(AttemptStarted, st.booleans()),
    st.just(AttemptEnded()),
    st.builds(lambda stop: SavepointRequested(waiting(stop)), st.booleans()),
    st.just(SavepointStarted()),
    st.just(StopSavepointFailed()),
    st.just(ShutDown()),
)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.lists(EVENTS, max_size=30))
def test_any_event_sequence_leaves_a_consistent_state_or_is_refused(
    events: list[CoordinatorEvent[str]],
) -> None:
    """Raw events, no guards: an event is refused (the state stays) or leads to a state
    whose answers agree; Shut is never left; Stopping is left only by its failure, the end
    of the attempt, or the shutdown."""
    state: State = Idle()
    for event in events:
        try:
            after = state.on(event)
        except IllegalCoordinatorTransition:
            continue
        assert isinstance(after, CoordinatorState)
        if isinstance(state, Shut):
            assert after == Shut()
        if isinstance(state, Stopping) and not isinstance(after, Stopping):
            assert isinstance(event, StopSavepointFailed | AttemptEnded | ShutDown)
        if isinstance(after, Idle | Shut):
            assert not after.attempt_running and not after.periodic and after.waiting is None
        if after.waiting is not None:
            assert after.attempt_running and not isinstance(after, AttemptRunning)
            assert after.stopping == after.waiting.request.stop
        if after.stopping:
            assert isinstance(after, Stopping)
        state = after
