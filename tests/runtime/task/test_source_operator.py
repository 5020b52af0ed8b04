"""The watermark emitter's lifecycle in the operators that own one (a source's head and
``assign_timestamps_and_watermarks``): built by ``open``, closed by ``close`` only if built,
and no record before it. (Slicing of a source's output: ``test_source_slicing.py``.)"""

from __future__ import annotations

import re
from typing import Any

import pytest

from undertow.common import WatermarkStrategy
from undertow.core.errors import StateError
from undertow.runtime.task.source_operator import SourceOperator, TimestampsAndWatermarksOperator
from undertow.testing.harness import OneInputOperatorTestHarness


def test_periodic_watermarks_stop_once_the_operator_closed() -> None:
    harness = OneInputOperatorTestHarness(
        TimestampsAndWatermarksOperator(WatermarkStrategy.for_monotonous_timestamps())
    )
    harness.open()
    harness.process_elements(["a", "b"], [100, 300])
    harness.set_processing_time(200)  # pipeline.auto-watermark-interval
    assert harness.get_watermarks() == [299]
    assert harness.processing_time_service.num_pending() == 1
    harness.close()
    assert harness.processing_time_service.num_pending() == 0, "the emitter's timer runs on"


def test_an_operator_that_never_opened_closes_without_error() -> None:
    harness = OneInputOperatorTestHarness(
        TimestampsAndWatermarksOperator(WatermarkStrategy.no_watermarks()), name="stamps"
    )
    harness.setup()
    harness.close()

    class Failing:
        def create_reader(self, context: Any) -> Any:
            raise OSError("no such topic")

    source = SourceOperator(Failing(), WatermarkStrategy.no_watermarks())
    source.setup(harness.setup_context)
    source.close()  # the task closes what it set up, also after a failed open
    with pytest.raises(OSError, match="no such topic"):
        source.open()
    source.close()


def test_records_before_open_fail_naming_the_operator() -> None:
    harness = OneInputOperatorTestHarness(
        TimestampsAndWatermarksOperator(WatermarkStrategy.no_watermarks()), name="stamps"
    )
    harness.setup()
    with pytest.raises(StateError, match="operator 'stamps' processes records before open"):
        harness.operator.process_batch([1], None)
    source = SourceOperator(None, None)
    source.setup(harness.setup_context)
    source.collect_batch([1, 2])
    with pytest.raises(StateError, match="source 'stamps' emits records before open"):
        source.emit_pending(2)


@pytest.mark.parametrize("bad", ["2000", 2.5, None])
def test_an_assigner_returning_no_int_fails_naming_the_value_and_record(bad: Any) -> None:
    """A str (or float) timestamp used to reach a window as a bare TypeError; None is a
    record without a timestamp, allowed here (a window names it)."""
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(
        lambda v, _: bad if v == "b" else 100
    )
    harness = OneInputOperatorTestHarness(TimestampsAndWatermarksOperator(strategy))
    harness.open()
    harness.process_elements(["a"], None)
    if bad is None:
        harness.process_elements(["a", "b"], None)
        return
    message = re.escape(f"returned {bad!r} ({type(bad).__name__}) for the record 'b'")
    with pytest.raises(TypeError, match=message):
        harness.process_elements(["a", "b"], None)


@pytest.mark.parametrize("stamps", [None, [1, None, 3]], ids=["unstamped", "stamped"])
def test_an_assigner_raising_on_a_record_fails_naming_that_record(stamps: Any) -> None:
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(
        lambda v, _: 1000 // v
    )
    harness = OneInputOperatorTestHarness(TimestampsAndWatermarksOperator(strategy))
    harness.open()
    with pytest.raises(ZeroDivisionError) as caught:
        harness.process_elements([5, 0, 2], stamps)
    assert caught.value.__notes__ == ["on the record 0"]


def test_an_assigner_gets_the_records_previous_timestamp() -> None:
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(
        lambda v, previous: previous + v
    )
    with OneInputOperatorTestHarness(TimestampsAndWatermarksOperator(strategy)) as harness:
        harness.process_elements([1, 2], [10, 20])
        assert harness.get_output() == [(1, 11), (2, 22)]
