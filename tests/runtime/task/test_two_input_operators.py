"""The two-input operators (:mod:`undertow.runtime.task.two_input_operators`): each input's
records go to its own method of the user's function, timestamps kept; the function opens and
closes with the operator. Set up and opened by the testing kit's harness, fed per input."""

from __future__ import annotations

from typing import Any

from undertow.api.functions import CoFlatMapFunction, CoMapFunction
from undertow.runtime.task.two_input_operators import CoFlatMapOperator, CoMapOperator
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
