"""The task's half of channel recovery: restored channel state put back in place."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from undertow.core.errors import StateError
from undertow.datastream import StreamExecutionEnvironment
from undertow.graph.job_graph import JobVertex
from undertow.runtime.checkpoint.channel_recovery.feed import (
    RestoredInput,
    SubtaskChannelRecovery,
    restore_in_place,
)
from undertow.runtime.checkpoint.channel_recovery.stream import RestoredInputStream
from undertow.runtime.checkpoint.channel_state_writer import (
    decode_chunk,
    encode_chunk,
    encode_recovered_chunk,
)
from undertow.runtime.checkpoint.snapshot import ChannelState, SubtaskSnapshot
from undertow.runtime.network.buffer import Buffer, serialize_batch
from undertow.runtime.network.input_gate import InputChannel, InputGate
from undertow.runtime.network.partition import ResultPartition


def plus_one() -> JobVertex:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    env.from_collection([1]).rebalance().map(lambda x: x + 1).name("plus").rebalance().print()
    [vertex] = [v for v in env._job_graph("feed").vertices if v.name == "plus"]
    return vertex


@dataclass
class Subtask:
    """A ``RecoveringSubtask``: subtask 1 of ``plus`` with one gate of two channels."""

    vertex: JobVertex = field(default_factory=plus_one)
    subtask_index: int = 1
    gates: tuple[InputGate, ...] = ()
    channel_recovery: SubtaskChannelRecovery = field(default_factory=SubtaskChannelRecovery)

    def __post_init__(self) -> None:
        gate = InputGate("plus input", self.vertex.inputs[0].target_input, floating_buffers=8)
        for i in range(2):
            gate.add_channel(i, f"plus input {i}", initial_credit=2)
        self.gates = (gate,)

    @property
    def name(self) -> str:
        return f"plus (2/{self.vertex.parallelism})"


@dataclass(frozen=True)
class Legacy:
    """A snapshot type of its own that carries channel state (the capability, not the class,
    is what ``restore_in_place`` asks for)."""

    channel_state: ChannelState | None


def decoded(take: Callable[[InputChannel, list[Any], bool], None]) -> RestoredInput:
    """An ``add_input`` that decodes each handed-over stream at once, in hand-over order."""

    def add(gate: Any, channel: InputChannel, stream: RestoredInputStream, rec: bool) -> None:
        for chunk in iter(stream.next_chunk, None):
            batch = channel.deserializer.add(decode_chunk(chunk))
            if batch is not None:
                take(channel, batch[0], rec)

    return add


def chunks(*batches: list[int]) -> tuple[bytes, ...]:
    return tuple(encode_chunk(Buffer(serialize_batch(b, None))) for b in batches)


def state(**kw: Any) -> ChannelState:
    return ChannelState(9, 1, 2, (2,), (2,), **kw)


def output() -> ResultPartition:
    return ResultPartition("out", [0, 1], buffers_per_channel=2, floating_buffers=2,
                           max_buffers_per_channel=10)  # fmt: skip


def test_restored_output_is_queued_and_restored_input_handed_over_in_channel_order() -> None:
    subtask = Subtask()
    partition = output()
    taken: list[tuple[int, list[Any]]] = []
    restored = state(
        inputs={(0, 1): chunks([3], [4]), (0, 0): chunks([1, 2])},
        outputs={(0, 1): chunks([7])},
    )
    restore_in_place(
        subtask, [SubtaskSnapshot(channel_state=restored)], [partition],
        decoded(lambda channel, values, rec: taken.append((channel.index, values))),
    )  # fmt: skip
    assert taken == [(0, [1, 2]), (1, [3]), (1, [4])]
    assert partition.subpartitions[1].sender.queued_data_buffers == 1
    assert partition.subpartitions[0].sender.queued_data_buffers == 0


def test_any_snapshot_with_the_capability_restores_and_none_restores_nothing() -> None:
    subtask = Subtask()
    taken: list[list[Any]] = []
    add = decoded(lambda channel, values, rec: taken.append(values))
    restore_in_place(subtask, [Legacy(None), SubtaskSnapshot()], [output()], add)
    assert taken == []
    restore_in_place(subtask, [Legacy(state(inputs={(0, 0): chunks([5])}))], [output()], add)
    assert taken == [[5]]


def recovered(*batches: list[int]) -> tuple[bytes, ...]:
    return tuple(encode_recovered_chunk(serialize_batch(b, None)) for b in batches)


def test_recovered_input_of_every_channel_goes_before_any_other_input() -> None:
    """A checkpoint during a rescaled recovery holds re-emitted records not yet processed as
    recovered chunks: they precede all live data of the gate, whichever channel it is on."""
    taken: list[tuple[int, list[Any], bool]] = []
    restored = state(inputs={
        (0, 0): chunks([10], [11]),
        (0, 1): recovered([1], [2]) + chunks([12]),
    })  # fmt: skip
    restore_in_place(
        Subtask(), [SubtaskSnapshot(channel_state=restored)], [output()],
        decoded(lambda channel, values, rec: taken.append((channel.index, values, rec))),
    )  # fmt: skip
    assert taken == [(1, [1], True), (1, [2], True), (0, [10], False), (0, [11], False),
                     (1, [12], False)]  # fmt: skip


def test_recovered_input_after_other_input_of_its_channel_is_refused() -> None:
    damaged = state(inputs={(0, 1): chunks([12]) + recovered([1])})
    with pytest.raises(StateError, match=r"checkpoint 9 holds recovered input of input channel "
                       r"\(0, 1\) after other input"):  # fmt: skip
        restore_in_place(Subtask(), [SubtaskSnapshot(channel_state=damaged)], [output()], print)


def test_state_of_another_shape_is_refused_naming_the_checkpoint_and_operator() -> None:
    subtask = Subtask()
    other = ChannelState(9, 1, 3, (3,), (2,), inputs={(0, 0): chunks([1])})
    with pytest.raises(StateError, match=r"checkpoint 9 holds in-flight data .* 'plus' taken "
                       r"at parallelism 3"):  # fmt: skip
        restore_in_place(subtask, [SubtaskSnapshot(channel_state=other)], [output()], print)
