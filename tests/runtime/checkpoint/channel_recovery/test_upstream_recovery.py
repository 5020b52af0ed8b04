"""The consumer side of channel recovery: a gate resumes once every channel ended its
re-emitted data; the subtask reports once every recovering gate did."""

from __future__ import annotations

from dataclasses import dataclass, field

from undertow.runtime.checkpoint.channel_recovery.upstream import (
    RecoveryCountdown,
    UpstreamRecoveryTracker,
)


@dataclass
class Channel:
    index: int
    resumed: int = 0

    def resume_consumption(self) -> None:
        self.resumed += 1


@dataclass
class Gate:
    channels: list[Channel] = field(default_factory=list)


def gate(n: int) -> Gate:
    return Gate([Channel(i) for i in range(n)])


def test_a_gate_resumes_all_its_channels_once_each_ended_its_channel_state() -> None:
    reports: list[str] = []
    tracker = UpstreamRecoveryTracker(frozenset({0, 1}), lambda: reports.append("recovered"))
    first, second = gate(2), gate(1)
    tracker.end_of_channel_state(0, first, first.channels[1])
    assert [c.resumed for c in first.channels] == [0, 0]  # still blocked: one is missing
    tracker.end_of_channel_state(0, first, first.channels[0])
    assert [c.resumed for c in first.channels] == [1, 1]
    assert tracker.recovering == {1} and tracker.is_recovering and reports == []
    tracker.end_of_channel_state(1, second, second.channels[0])
    assert second.channels[0].resumed == 1
    assert not tracker.is_recovering and reports == ["recovered"]


def test_the_subtask_reports_recovery_once() -> None:
    reports: list[str] = []
    tracker = UpstreamRecoveryTracker(frozenset({0}), lambda: reports.append("recovered"))
    only = gate(1)
    tracker.end_of_channel_state(0, only, only.channels[0])
    tracker.end_of_channel_state(0, only, only.channels[0])  # a later rescale's event
    assert reports == ["recovered"]


def test_without_recovering_gates_nothing_is_reported() -> None:
    tracker = UpstreamRecoveryTracker()
    assert not tracker.is_recovering
    only = gate(1)
    tracker.end_of_channel_state(0, only, only.channels[0])  # resumes, reports nothing
    assert only.channels[0].resumed == 1


def test_the_countdown_reports_once_after_its_last_part() -> None:
    reports: list[str] = []
    countdown = RecoveryCountdown(2, lambda: reports.append("recovered"))
    countdown.part_done()
    assert reports == []
    countdown.part_done()
    countdown.part_done()
    assert reports == ["recovered"]
    nothing = RecoveryCountdown(0, lambda: reports.append("never"))
    nothing.part_done()
    assert reports == ["recovered"]
