"""The record-at-a-time operators (:mod:`undertow.runtime.task.operators`) on the testing kit's
harness: each keeps its records' timestamps, opens and closes the user's function with the
operator, and passes watermarks and checkpoint notifications on."""

from __future__ import annotations

from typing import Any

import pytest

from undertow.api.functions import MapFunction
from undertow.runtime.task.operators import (
    ProcessOperator,
    SinkFunctionOperator,
    StreamFilter,
    StreamFlatMap,
    StreamMap,
    run_udf,
)
from undertow.testing.harness import OneInputOperatorTestHarness, Watermark


class Doubling(MapFunction):
    def __init__(self) -> None:
        self.calls: list[str] = []

    def open(self, runtime_context: Any) -> None:
        self.calls.append(f"open {runtime_context.get_task_name_with_subtasks()}")

    def map(self, value: int) -> int:
        return value * 2

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        self.calls.append(f"complete {checkpoint_id}")

    def close(self) -> None:
        self.calls.append("close")


def test_map_keeps_timestamps_and_runs_the_functions_lifecycle() -> None:
    function = Doubling()
    with OneInputOperatorTestHarness(StreamMap(function, function.map), name="double") as h:
        h.process_elements([1, 2], [10, 20])
        h.process_watermark(20)
        h.operator.notify_checkpoint_complete(3)
        assert h.get_output_with_watermarks() == [(2, 10), (4, 20), Watermark(20)]
    assert function.calls == ["open double (1/1)#0", "complete 3", "close"]


def test_flat_map_stamps_every_emitted_record() -> None:
    operator = StreamFlatMap(None, lambda v: [] if v == 0 else [v] * v)
    with OneInputOperatorTestHarness(operator) as h:
        h.process_elements([2, 0, 1], [5, 6, 7])
        assert h.get_output() == [(2, 5), (2, 5), (1, 7)]
        h.clear_output()
        h.process_elements([1])  # no timestamps: none on the output
        assert h.get_output() == [(1, None)]


@pytest.mark.parametrize("timestamps", [None, [5, 6, 7]])
def test_a_flat_map_function_that_returns_none_fails_naming_operator_and_record(
    timestamps: list[int] | None,
) -> None:
    """PyFlink iterates what the function returned (``yield from``), so ``None`` fails there
    with "'NoneType' object is not iterable"; here too, saying which operator and record.
    Skipped silently before."""
    operator = StreamFlatMap(None, lambda v: None if v == 0 else [v])
    with OneInputOperatorTestHarness(operator) as h, pytest.raises(TypeError, match=(
        r"^operator '.*' \(subtask 1/1\): the flat_map\(\) function returned None, which is "
        r"not iterable"
    )) as err:  # fmt: skip
        h.process_elements([2, 0, 1], timestamps)
    assert err.value.__notes__ == ["on the record 0"]
    assert isinstance(err.value.__cause__, TypeError)  # Python's own, chained


def test_a_flat_map_generator_that_raises_keeps_its_error() -> None:
    def failing(v: int) -> Any:
        yield v
        raise ValueError(f"bad {v}")

    harness = OneInputOperatorTestHarness(StreamFlatMap(None, failing))
    with harness as h, pytest.raises(ValueError, match="bad 3") as err:
        h.process_elements([3])
    assert err.value.__notes__ == ["on the record 3"]


def test_filter_keeps_the_timestamps_of_what_passes() -> None:
    with OneInputOperatorTestHarness(StreamFilter(None, lambda v: v % 2)) as h:
        h.process_elements([1, 2, 3], [1, 2, 3])
        assert h.get_output() == [(1, 1), (3, 3)]


def test_run_udf_appends_a_timestamp_per_returned_record() -> None:
    out: list[Any] = []
    stamps: list[Any] = []
    run_udf(iter(["a", "b"]), out, stamps, 9)
    run_udf(None, out, stamps, 10)
    assert (out, stamps) == (["a", "b"], [9, 9])


def _fails_on_3(value: int) -> int:
    if value == 3:
        raise ValueError(f"cannot take {value}")
    return value


@pytest.mark.parametrize(
    ("operator", "stamps"),
    [
        (StreamMap(None, _fails_on_3), None),
        (StreamMap(None, _fails_on_3), [1, 2, 3, 4]),
        (StreamFlatMap(None, lambda v: [_fails_on_3(v)]), None),
        (StreamFlatMap(None, lambda v: [_fails_on_3(v)]), [1, 2, 3, 4]),
        (StreamFilter(None, _fails_on_3), None),
        (ProcessOperator(None, lambda v, ctx: [_fails_on_3(v)]), [1, 2, 3, 4]),
        (SinkFunctionOperator(None, lambda v, ctx: _fails_on_3(v)), None),
    ],
    ids=["map", "map-stamped", "flat_map", "flat_map-stamped", "filter", "process", "sink"],
)
def test_a_function_raising_on_a_record_fails_naming_that_record(
    operator: Any, stamps: list[int] | None
) -> None:
    """The user's error keeps its type and message; a note names the record it raised on
    (the task's failure report and the traceback show it)."""
    with OneInputOperatorTestHarness(operator) as h, pytest.raises(ValueError) as caught:
        h.process_elements([1, 2, 3, 4], stamps)
    assert str(caught.value) == "cannot take 3"
    assert caught.value.__notes__ == ["on the record 3"]


def test_a_process_function_returning_one_record_fails_saying_to_yield() -> None:
    """``return value * 2`` instead of ``yield``: the error says what to do, names the record."""
    operator = ProcessOperator(None, lambda v, ctx: v * 2)
    with OneInputOperatorTestHarness(operator) as h, pytest.raises(TypeError) as caught:
        h.process_elements([1, 2])
    assert str(caught.value).startswith("the function returned 2 (int), which is not iterable")
    assert "yields its output records" in str(caught.value)
    assert caught.value.__notes__ == ["on the record 1"]


def test_a_type_error_inside_a_generator_is_the_functions_own() -> None:
    def gen(v: int, ctx: Any) -> Any:
        yield v + "x"  # type: ignore[operator]

    with (
        OneInputOperatorTestHarness(ProcessOperator(None, gen)) as h,
        pytest.raises(TypeError, match="unsupported operand"),
    ):
        h.process_elements([1])
