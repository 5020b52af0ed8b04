"""TaskPace: short slices for a while after each checkpoint event, normal ones otherwise."""

from __future__ import annotations

import socket

import pytest

from undertow.core.config import Configuration
from undertow.runtime.task.pace import HURRY_WINDOW_S, TaskPace


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_slices_are_short_only_within_the_window_after_the_latest_event() -> None:
    clock = Clock()
    pace = TaskPace(2, 0.25, clock)
    assert pace.slice_s(clock.now) == pytest.approx(0.002) and not pace.hurried
    pace.hurry()
    assert pace.hurried and pace.slice_s(clock.now) == pytest.approx(0.00025)
    clock.now += HURRY_WINDOW_S / 2
    pace.hurry()  # a later event extends the window
    clock.now += HURRY_WINDOW_S * 0.9
    assert pace.slice_s(clock.now) == pytest.approx(0.00025)
    clock.now += HURRY_WINDOW_S * 0.2
    assert not pace.hurried and pace.slice_s(clock.now) == pytest.approx(0.002)


def test_the_hurried_slice_is_never_longer_than_the_normal_one() -> None:
    pace = TaskPace(0.5, 1)
    pace.hurry()
    assert pace.slice_s(0.0) == pytest.approx(0.0005)


def test_built_from_the_configuration() -> None:
    config = Configuration(
        {"undertow.task.mailbox-slice": "3 ms",
         "undertow.task.mailbox-slice-during-checkpoint": "500 us"}
    )  # fmt: skip
    pace = TaskPace.of(config)
    assert (pace.normal_s, pace.hurried_s) == pytest.approx((0.003, 0.0005))


def test_non_positive_slices_are_refused() -> None:
    with pytest.raises(ValueError, match="> 0 ms"):
        TaskPace(0, 0.25)


def test_bytes_waiting_on_the_watched_socket_hurry_the_pace() -> None:
    ours, jobmaster = socket.socketpair()
    with ours, jobmaster:
        clock = Clock()
        pace = TaskPace(2, 0.25, clock)
        pace.watch(ours.fileno())
        assert pace.slice_s(clock.now) == pytest.approx(0.002)
        jobmaster.send(b"trigger checkpoint 7")
        assert pace.slice_s(clock.now) == pytest.approx(0.00025)
        ours.recv(100)  # the loop read the message: the window still runs
        clock.now += HURRY_WINDOW_S / 2
        assert pace.slice_s(clock.now) == pytest.approx(0.00025)
        clock.now += HURRY_WINDOW_S
        assert pace.slice_s(clock.now) == pytest.approx(0.002)
