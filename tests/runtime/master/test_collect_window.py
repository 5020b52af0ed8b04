"""``CollectWindow``: the driver's credit decisions for a collect sink, against a model of the
sink (sends while its credit is above 0), the wire (messages in flight both ways), the
checkpoints that release held bytes, the reader and restarts."""

from __future__ import annotations

from collections import deque

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from undertow.runtime.master.collect_window import CollectWindow, Grant

#: The largest batch the model's sink sends (bytes).
MAX_BATCH = 40


def test_the_first_attempt_gets_the_whole_window() -> None:
    window = CollectWindow(100)
    assert window.attempt_started(0) == Grant(0, 100)
    assert window.statistics().outstanding == 100


def test_credit_returns_once_the_reader_took_half_a_window() -> None:
    window = CollectWindow(100)
    window.attempt_started(0)
    assert window.received(0, 60, final=True) is None
    assert window.received(0, 40, final=True) is None
    assert window.taken(40) is None  # 40 free: less than half
    assert window.taken(10) == Grant(0, 50)
    assert window.statistics().unread + window.statistics().outstanding == 100


def test_an_overrun_is_paid_by_the_next_grant() -> None:
    window = CollectWindow(100)
    window.attempt_started(0)
    window.received(0, 130, final=True)  # credit 100, one batch of 130
    assert window.statistics().outstanding == -30
    assert window.taken(130) == Grant(0, 130)  # the sink's credit is 100 again


def test_held_bytes_count_until_released_and_free_when_dropped() -> None:
    window = CollectWindow(100)
    window.attempt_started(0)
    window.received(0, 100, final=False)
    assert window.released(100) is None
    assert window.statistics().ready == 100
    window.attempt_ended()
    window.received(0, 0, final=False)
    assert window.attempt_started(1) is None  # 100 ready: nothing free
    assert window.taken(100) == Grant(1, 100)


def test_a_new_attempt_voids_the_old_attempts_credit() -> None:
    window = CollectWindow(100)
    window.attempt_started(0)
    window.received(0, 30, final=False)  # 70 granted and never sent
    window.attempt_ended()
    assert window.dropped(30) is None  # between attempts nobody is granted
    assert window.attempt_started(1) == Grant(1, 100)


def test_a_waiting_reader_with_everything_held_overdraws_half_a_window() -> None:
    window = CollectWindow(100)
    window.attempt_started(0)
    window.received(0, 100, final=False)
    assert window.reader_waits() == Grant(0, 50)
    assert window.statistics().overdrawn
    assert window.received(0, 20, final=False) is None  # 30 still on its way
    assert window.received(0, 30, final=False) == Grant(0, 50)  # used up: again
    assert window.released(150) is None
    assert window.taken(150) == Grant(0, 50)  # back within the window (50 on its way)
    assert not window.statistics().overdrawn


def test_a_window_must_be_positive() -> None:
    with pytest.raises(ValueError, match="above 0 bytes; got 0"):
        CollectWindow(0)


class CollectFlow(RuleBasedStateMachine):
    """Driver, wire and sink; the window's promises checked after every step."""

    @initialize(window=st.integers(1, 100), exactly_once=st.booleans())
    def start(self, window: int, exactly_once: bool) -> None:
        self.window = CollectWindow(window)
        self.exactly_once = exactly_once
        self.attempt = 0
        self.sink_credit = 0
        self.data: deque[int] = deque()  # sink -> driver
        self.grants: deque[Grant] = deque()  # driver -> sink
        self.held: list[int] = []
        self.ready: deque[int] = deque()
        #: The reader has waited with nothing ready: the overdraft may be in use.
        self.overdraft = False
        self._grant(self.window.attempt_started(0))

    def _grant(self, grant: Grant | None) -> None:
        if grant is not None:
            assert grant.credit > 0
            self.grants.append(grant)

    @precondition(lambda self: self.sink_credit > 0)
    @rule(size=st.integers(1, MAX_BATCH))
    def sink_sends(self, size: int) -> None:
        self.sink_credit -= size
        self.data.append(size)

    @precondition(lambda self: bool(self.data))
    @rule()
    def driver_receives(self) -> None:
        size = self.data.popleft()
        if self.exactly_once:
            self.held.append(size)
        else:
            self.ready.append(size)
        self._grant(self.window.received(self.attempt, size, final=not self.exactly_once))

    @precondition(lambda self: bool(self.grants))
    @rule()
    def sink_gets_credit(self) -> None:
        grant = self.grants.popleft()
        if grant.attempt == self.attempt:
            self.sink_credit += grant.credit

    @precondition(lambda self: bool(self.held))
    @rule()
    def checkpoint_completes(self) -> None:
        self.ready.extend(self.held)
        size, self.held = sum(self.held), []
        self._grant(self.window.released(size))

    @precondition(lambda self: bool(self.ready))
    @rule()
    def reader_takes(self) -> None:
        self._grant(self.window.taken(self.ready.popleft()))

    @precondition(lambda self: not self.ready)
    @rule()
    def reader_waits(self) -> None:
        self.overdraft = True
        self._grant(self.window.reader_waits())

    @rule()
    def restart(self) -> None:
        self.window.attempt_ended()
        self.data.clear()  # fenced: an older attempt's messages are dropped
        self._grant(self.window.dropped(sum(self.held)))
        self.held = []
        self.attempt += 1
        self.sink_credit = 0
        self._grant(self.window.attempt_started(self.attempt))

    @invariant()
    def accounting_matches(self) -> None:
        stats = self.window.statistics()
        assert (stats.held, stats.ready) == (sum(self.held), sum(self.ready))

    @invariant()
    def the_driver_holds_at_most_the_window_and_a_batch(self) -> None:
        if not self.overdraft:
            held = sum(self.held) + sum(self.ready) + sum(self.data)
            assert held <= self.window.window + MAX_BATCH

    @invariant()
    def the_sink_is_never_stuck_for_good(self) -> None:
        if self.data or self.grants or self.sink_credit > 0:
            return
        # nothing moves and the sink cannot send: the reader must be able to go on, or a
        # checkpoint release what is held, or the reader's wait bring an overdraft
        assert self.ready or (self.held and not self.window.waiting)


TestCollectFlow = CollectFlow.TestCase
TestCollectFlow.settings = settings(max_examples=200, stateful_step_count=60, deadline=None,
                                    derandomize=True)  # fmt: skip


@given(window=st.integers(1, 10**9), sizes=st.lists(st.integers(1, 10**6), max_size=30))
def test_grants_never_commit_more_than_the_window(window: int, sizes: list[int]) -> None:
    """After a grant, what is unread plus what the sink may still send is the window."""
    w = CollectWindow(window)
    w.attempt_started(0)
    for size in sizes:
        w.received(0, size, final=True)
        grant = w.taken(size)
        stats = w.statistics()
        if grant is not None:
            assert stats.unread + stats.outstanding == window
        assert stats.unread + stats.outstanding <= window
