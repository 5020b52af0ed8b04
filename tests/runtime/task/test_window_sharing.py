"""Windows equal to each other are one instance in the window operator's state and timers, so
a checkpoint pickles a window once per key group, not once per key (the window shape of issue
14: 10,000 keys in one window pickled 10,000 windows twice, state and timers, ~11 ms)."""

from __future__ import annotations

from typing import Any

from undertow.api.window import TimeWindow, TumblingProcessingTimeWindows
from undertow.common import Time
from undertow.runtime.task.window_operator import WindowOperator, reduce_window_contents
from undertow.testing.harness import KeyedOneInputOperatorTestHarness


def _sum(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    return (a[0], a[1] + b[1])


def harness(open_it: bool = True) -> KeyedOneInputOperatorTestHarness:
    assigner = TumblingProcessingTimeWindows.of(Time.seconds(1))
    contents = reduce_window_contents(_sum)
    op = WindowOperator(assigner=assigner, trigger=assigner.get_default_trigger(None),
                        key_selector=lambda v: v[0], window_function=contents.window_function,
                        state_descriptor=contents.state_descriptor)  # fmt: skip
    h = KeyedOneInputOperatorTestHarness(op)
    if open_it:
        h.open()
    return h


def timers_of(h: KeyedOneInputOperatorTestHarness) -> list[Any]:
    return [t for s in h.timer_services.services.values() for t in s.processing_time_timers()]


def test_all_keys_of_one_window_share_its_instance_and_a_snapshot_restores_it() -> None:
    h = harness()
    h.set_processing_time(100)
    h.process_elements([(k, 1) for k in range(2000)])
    timers = timers_of(h)
    assert len(timers) == 2000
    assert len({id(t.namespace) for t in timers}) == 1, "one window instance for every key"
    keyed = dict(h.keyed_backend.snapshot().items())
    timer_blobs = dict(h.timer_services.snapshot().items())
    # a window pickles to ~30 bytes; once per key it would be ~60 KB more for 2,000 keys
    assert sum(map(len, timer_blobs.values())) < 2000 * 25, "the window is pickled once per group"
    restored = harness(open_it=False)
    restored.keyed_backend.restore(keyed)
    restored.timer_services.restore(timer_blobs)
    restored.open()  # creates the timer service, which takes the restored timers
    restored.set_processing_time(100)
    restored.process_elements([(0, 1)])
    assert {t.namespace for t in timers_of(restored)} == {TimeWindow(0, 1000)}
    restored.set_processing_time(1000)
    out = sorted(restored.extract_output_values())
    assert len(out) == 2000 and out[:2] == [(0, 2), (1, 1)]
    h.close()
    restored.close()


def test_the_next_period_shares_its_own_window() -> None:
    h = harness()
    h.set_processing_time(100)
    h.process_elements([(1, 1)])
    h.set_processing_time(1100)  # the first window fired and was cleaned up
    h.process_elements([(1, 1), (2, 1)])
    timers = timers_of(h)
    assert [t.namespace for t in timers] == [TimeWindow(1000, 2000)] * 2
    assert timers[0].namespace is timers[1].namespace
    h.close()
