"""The two-input operators (:mod:`undertow.runtime.task.two_input_operators`): each input's
records go to its own method of the user's function, timestamps kept; the function opens and
closes with the operator. Set up and opened by the testing kit's harness, fed per input."""

from __future__ import annotations

from typing import Any

import pytest

from undertow.api.functions import CoFlatMapFunction, CoMapFunction, CoProcessFunction
from undertow.runtime.task.two_input_operators import (
    CoFlatMapOperator,
    CoMapOperator,
    CoProcessOperator,
)
from undertow.testing.harness import OneInputOperatorTestHarness


class Tagging(CoMapFunction):
    def __init__(self) -> None:
        self.calls: list[str] = []

    def open(self, runtime_context: Any) -> None:
        self.calls.append("open")

    def map1(self, value: Any) -> Any:
        return ("left", value)

    def map2(self, value: Any) -> Any:
        return ("right", value)

    def close(self) -> None:
        self.calls.append("close")


class Repeating(CoFlatMapFunction):
    def flat_map1(self, value: int) -> Any:
        return [value] * value

    def flat_map2(self, value: int) -> Any:
        return None


def test_co_map_sends_each_input_to_its_method() -> None:
    function = Tagging()
    with OneInputOperatorTestHarness(CoMapOperator(function)) as h:  # type: ignore[arg-type]
        operator: Any = h.operator
        operator.process_batch1([1], [10])
        operator.process_batch2([2], [20])
        assert h.get_output() == [(("left", 1), 10), (("right", 2), 20)]
    assert function.calls == ["open", "close"]


def test_co_flat_map_stamps_each_record_and_emits_nothing_for_none() -> None:
    with OneInputOperatorTestHarness(CoFlatMapOperator(Repeating())) as h:  # type: ignore[arg-type]
        operator: Any = h.operator
        operator.process_batch1([2, 1], [5, 6])
        operator.process_batch2([3], [7])
        operator.process_batch1([1], None)
        assert h.get_output() == [(2, 5), (2, 5), (1, 6), (1, None)]


class Listening(Tagging):
    """A co-map function told of checkpoints: the barrier before it passes, and the outcome."""

    def prepare_snapshot_pre_barrier(self, checkpoint_id: int) -> None:
        self.calls.append(f"barrier {checkpoint_id}")

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        self.calls.append(f"complete {checkpoint_id}")

    def notify_checkpoint_aborted(self, checkpoint_id: int) -> None:
        self.calls.append(f"aborted {checkpoint_id}")


def test_the_function_is_told_of_barriers_and_checkpoints_as_one_input_functions_are() -> None:
    function = Listening()
    with OneInputOperatorTestHarness(CoMapOperator(function)) as h:  # type: ignore[arg-type]
        h.operator.prepare_snapshot_pre_barrier(3)
        h.operator.notify_checkpoint_complete(3)
        h.operator.prepare_snapshot_pre_barrier(4)
        h.operator.notify_checkpoint_aborted(4)
    assert function.calls == [
        "open", "barrier 3", "complete 3", "barrier 4", "aborted 4", "close",
    ]  # fmt: skip


class Dividing(CoMapFunction, CoFlatMapFunction):
    def map1(self, value: int) -> int:
        return 12 // value

    def map2(self, value: int) -> int:
        return 12 // value

    def flat_map1(self, value: int) -> Any:
        return [12 // value]

    def flat_map2(self, value: int) -> Any:
        yield 12 // value


@pytest.mark.parametrize("make", [CoMapOperator, CoFlatMapOperator], ids=["co_map", "co_flat_map"])
@pytest.mark.parametrize("side", [1, 2])
def test_a_function_raising_on_a_record_of_either_input_names_that_record(
    make: Any, side: int
) -> None:
    with OneInputOperatorTestHarness(make(Dividing())) as h:
        operator: Any = h.operator
        process = operator.process_batch1 if side == 1 else operator.process_batch2
        with pytest.raises(ZeroDivisionError) as caught:
            process([4, 0, 3], None)
    assert caught.value.__notes__ == ["on the record 0"]


def test_a_co_process_function_raising_on_a_record_names_that_record() -> None:
    class Failing(CoProcessFunction):
        def process_element1(self, value: int, ctx: Any) -> Any:
            yield 12 // value

        def process_element2(self, value: int, ctx: Any) -> Any:
            yield value

    with OneInputOperatorTestHarness(CoProcessOperator.co_process(Failing())) as h:
        operator: Any = h.operator
        with pytest.raises(ZeroDivisionError) as caught:
            operator.process_batch1([4, 0], [1, 2])
    assert caught.value.__notes__ == ["on the record 0"]
