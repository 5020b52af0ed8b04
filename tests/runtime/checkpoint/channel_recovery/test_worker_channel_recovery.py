"""The worker's interface to channel recovery: what each subtask restores, from one read."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field

import pytest

from undertow.core.errors import RestoreError
from undertow.datastream import StreamExecutionEnvironment
from undertow.graph.job_graph import JobVertex
from undertow.runtime.checkpoint.channel_recovery import (
    ReemittedChannel,
    SubtaskChannelRecovery,
    WorkerChannelRecovery,
    in_place_input_subtasks,
)
from undertow.runtime.checkpoint.channel_recovery.reader import RestoredChannels
from undertow.runtime.checkpoint.channel_recovery.rescale import ReemitChannel
from undertow.runtime.checkpoint.channel_recovery.stream import RestoredInputStream
from undertow.runtime.checkpoint.channel_state_handles import (
    ChannelStateDirection,
    ChannelStateHandles,
    build_handle,
)
from undertow.runtime.checkpoint.snapshot import SubtaskSnapshot
from undertow.runtime.network.input_gate import InputGate


@dataclass(frozen=True)
class Assignment:
    """A restore assignment without channel state in files (nothing is read)."""

    checkpoint_id: int = 7
    checkpoint_dir: str = "memory://unused"
    job_id: str = "0" * 32
    channel_state: Mapping[tuple[int, int], ChannelStateHandles] = field(default_factory=dict)
    reemit: Mapping[tuple[int, int], tuple[ReemitChannel, ...]] = field(default_factory=dict)
    rescaled_gates: Mapping[int, frozenset[int]] = field(default_factory=dict)
    rescaled_outputs: Mapping[int, frozenset[int]] = field(default_factory=dict)
    finished_vertices: frozenset[int] = frozenset()
    refers_to_channel_state: bool = False


def plus_one() -> JobVertex:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    env.from_collection([1]).rebalance().map(lambda x: x + 1).name("plus").rebalance().print()
    [vertex] = [v for v in env._job_graph("recovery").vertices if v.name == "plus"]
    return vertex


def test_a_fresh_start_recovers_nothing() -> None:
    recovery = asyncio.run(WorkerChannelRecovery.read(None, {(1, 0)}, None))
    assert recovery.for_subtask(1, 0) == SubtaskChannelRecovery()
    vertex = plus_one()
    assert recovery.snapshots_of(vertex, 0, None, [], []) is None


def test_a_subtask_learns_what_it_reemits_and_which_gates_and_outputs_recover() -> None:
    assignment = Assignment(
        rescaled_gates={3: frozenset({0})}, rescaled_outputs={2: frozenset({1})}
    )
    recovery = asyncio.run(WorkerChannelRecovery.read(assignment, {(2, 0), (3, 0)}, None))
    old = RestoredInputStream([b"a", b"b"])
    recovery = WorkerChannelRecovery(
        recovery.in_place, {(2, 0): [(1, [old], "old 0 -> 1")]},
        recovery.rescaled_gates, recovery.rescaled_outputs,
    )  # fmt: skip
    assert recovery.for_subtask(2, 0) == SubtaskChannelRecovery(
        reemit=(ReemittedChannel(1, (old,), "old 0 -> 1"),), recovery_outputs=frozenset({1})
    )
    assert recovery.for_subtask(3, 0) == SubtaskChannelRecovery(recovering_gates=frozenset({0}))
    assert recovery.for_subtask(2, 1) == SubtaskChannelRecovery(recovery_outputs=frozenset({1}))


def test_in_place_state_is_attached_to_the_snapshot_and_checked_against_the_gates() -> None:
    vertex = plus_one()
    gate = InputGate("plus input", vertex.inputs[0].target_input, floating_buffers=8)
    gate.add_channel(0, "plus input 0", initial_credit=2)
    streams = (RestoredInputStream([]), RestoredInputStream([b"x"]))
    restored = RestoredChannels(7, {(0, 0): streams}, {})
    recovery = WorkerChannelRecovery({(vertex.id, 1): restored}, {}, {}, {})
    [snapshot] = recovery.snapshots_of(vertex, 1, None, [gate], []) or []
    assert isinstance(snapshot, SubtaskSnapshot) and snapshot.channel_state is not None
    assert snapshot.channel_state.inputs == {}  # the input comes as lazy streams:
    assert recovery.for_subtask(vertex.id, 1).restored_input == {(0, 0): streams}
    wrong = WorkerChannelRecovery({(vertex.id, 1): RestoredChannels(7, {(0, 5): streams}, {})},
                                  {}, {}, {})  # fmt: skip
    with pytest.raises(RestoreError, match=r"plus \(2/2\): checkpoint 7 holds input channel"):
        wrong.snapshots_of(vertex, 1, None, [gate], [])


def inline(direction: ChannelStateDirection) -> ChannelStateHandles:
    data = b"abc"
    handle = build_handle("plus (1/2)", 7, direction, {(0, 0): [data]}, 0,
                          hashlib.sha256(data).hexdigest(), inline_data=data)  # fmt: skip
    if direction is ChannelStateDirection.INPUT:
        return ChannelStateHandles(input=handle)
    return ChannelStateHandles(output=handle)


def test_with_during_recovery_off_subtasks_restoring_input_in_place_report_it() -> None:
    """One rule for the JobMaster and the workers: a subtask of a running vertex with input
    channel state restored in place reports; output state only, or finished: no report."""
    state = {
        (2, 0): inline(ChannelStateDirection.INPUT),
        (2, 1): inline(ChannelStateDirection.OUTPUT),
        (4, 0): inline(ChannelStateDirection.INPUT),
    }
    assert in_place_input_subtasks(state, frozenset({4})) == {(2, 0)}
    off = asyncio.run(WorkerChannelRecovery.read(
        Assignment(channel_state=state, finished_vertices=frozenset({4})),
        {(2, 0), (2, 1), (4, 0)}, None, during_recovery=False,
    ))  # fmt: skip
    assert off.for_subtask(2, 0).reports_restored_input
    assert set(off.for_subtask(2, 0).restored_input) == {(0, 0)}
    output_only = off.for_subtask(2, 1)
    assert not output_only.reports_restored_input and set(output_only.restored_output) == {(0, 0)}
    on = asyncio.run(WorkerChannelRecovery.read(
        Assignment(channel_state=state), {(2, 0)}, None, during_recovery=True
    ))  # fmt: skip
    assert not on.for_subtask(2, 0).reports_restored_input


def test_with_during_recovery_off_consumers_of_re_emitted_data_report_once_they_processed_it() -> (
    None
):
    """On, a consumer of a rescaled edge reports once its gates received the re-emitted data
    (drained, unprocessed); off, also only once it processed it."""
    assignment = Assignment(rescaled_gates={3: frozenset({0})})
    off = asyncio.run(WorkerChannelRecovery.read(assignment, {(3, 0), (2, 0)}, None,
                                                 during_recovery=False))  # fmt: skip
    assert off.for_subtask(3, 0) == SubtaskChannelRecovery(
        recovering_gates=frozenset({0}), reports_restored_input=True
    )
    assert off.for_subtask(2, 0) == SubtaskChannelRecovery()
    on = asyncio.run(WorkerChannelRecovery.read(assignment, {(3, 0)}, None))
    assert on.for_subtask(3, 0) == SubtaskChannelRecovery(recovering_gates=frozenset({0}))
