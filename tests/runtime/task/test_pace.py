"""TaskPace: short slices for a while after each checkpoint event, normal ones otherwise; a
busy task gives way to checkpoint work (GiveWay)."""

from __future__ import annotations

import socket

import pytest

from undertow.core.config import Configuration
from undertow.runtime.task import pace as pace_module
from undertow.runtime.task.pace import HURRY_WINDOW_S, MAX_TURNS_GIVEN, GiveWay, TaskPace


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


def test_where_sockets_cannot_be_watched_watching_is_a_no_op(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without ``select.poll`` (Windows) a worker still deploys and watches nothing: bytes
    waiting do not hurry, checkpoint events still do."""
    monkeypatch.setattr(pace_module, "CAN_WATCH_SOCKETS", False)
    ours, jobmaster = socket.socketpair()
    with ours, jobmaster:
        clock = Clock()
        pace = TaskPace(2, 0.25, clock)
        pace.watch(ours.fileno())
        pace.watch_data(ours.fileno())
        jobmaster.send(b"trigger checkpoint 7")
        assert pace.slice_s(clock.now) == pytest.approx(0.002)
        pace.hurry()
        assert pace.slice_s(clock.now) == pytest.approx(0.00025)


def test_a_busy_task_gives_way_once_per_checkpoint_event() -> None:
    pace = TaskPace(2, 0.25, Clock())
    give_way = GiveWay(pace)
    assert not give_way.now()
    pace.hurry()
    assert give_way.now() and not give_way.now()
    pace.hurry()
    pace.hurry()  # two events before the task's turn: one turn covers both
    assert give_way.now() and not give_way.now()


def test_bytes_waiting_take_two_turns_after_a_long_slice_only() -> None:
    ours, jobmaster = socket.socketpair()
    with ours, jobmaster:
        pace = TaskPace(2, 0.25, Clock())
        pace.watch(ours.fileno())
        give_way = GiveWay(pace)
        jobmaster.send(b"trigger checkpoint 7")
        assert not give_way.now()  # after a short slice the bytes wait for the next one
        give_way.long_slice = True
        assert give_way.now()  # the transport reads them
        ours.recv(100)
        assert give_way.now()  # the stream's reader hands them on
        assert not give_way.now()


def test_data_sockets_are_watched_while_hurried_only() -> None:
    ours, peer = socket.socketpair()
    with ours, peer:
        clock = Clock()
        pace = TaskPace(2, 0.25, clock)
        pace.watch_data(ours.fileno())
        give_way = GiveWay(pace)
        give_way.long_slice = True
        peer.send(b"a buffer")
        assert not pace.bytes_waiting() and not give_way.now()
        pace.hurry()
        assert pace.bytes_waiting()
        clock.now += HURRY_WINDOW_S * 2
        assert not pace.bytes_waiting()


def test_a_socket_that_stays_readable_cannot_starve_a_task() -> None:
    ours, jobmaster = socket.socketpair()
    with ours, jobmaster:
        pace = TaskPace(2, 0.25, Clock())
        pace.watch(ours.fileno())
        give_way = GiveWay(pace)
        give_way.long_slice = True
        jobmaster.close()  # readable for ever (end of file)
        turns = [give_way.now() for _ in range(2 * (MAX_TURNS_GIVEN + 1))]
        assert turns == ([True] * MAX_TURNS_GIVEN + [False]) * 2
