"""A subtask's restored channel state, put back before any operator runs.

In place (same parallelism): restored output buffers go back into their subpartitions, and
restored input becomes pending batches, processed before any live input. After a rescale:
the records of the old channels a producer took over are re-emitted through its record
writers, each rescaled output ending with a blocking ``EndOfChannelStateEvent``.

Threading: the task's loop thread, once, from ``StreamTask.run`` before ``open``.
Invariant: state of another shape is never restored in place (it fails, naming checkpoint
and operator); re-emitted records are not bounded by the output budget.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from undertow.core.errors import RestoreError, StateError
from undertow.runtime.checkpoint.channel_state_rescale import channel_records
from undertow.runtime.checkpoint.channel_state_writer import decode_chunk
from undertow.runtime.checkpoint.snapshot import ChannelState, SubtaskSnapshot
from undertow.runtime.network.input_gate import InputChannel, InputGate
from undertow.runtime.network.partition import RecordWriter, ResultPartition
from undertow.runtime.task.deployment import TaskDeployment
from undertow.runtime.task.events import EndOfChannelStateEvent

#: Takes one restored input batch: (gate, channel, values, timestamps).
RestoredInput = Callable[[InputGate, InputChannel, list[Any], Any], None]


def restore_in_place(
    deployment: TaskDeployment,
    snapshots: Sequence[SubtaskSnapshot],
    partitions: Sequence[ResultPartition],
    add_input: RestoredInput,
) -> None:
    """Queue restored output buffers; hand restored input batches to ``add_input``."""
    states = [s.channel_state for s in snapshots if getattr(s, "channel_state", None)]
    if not states:
        return
    state = states[0]
    assert state is not None
    _check_shape(deployment, state, len(snapshots), partitions)
    for (output, subpartition), chunks in sorted(state.outputs.items()):
        sp = partitions[output].subpartitions[subpartition]
        sp.add_buffers([decode_chunk(c) for c in chunks])
    for (gate_index, channel_index), chunks in sorted(state.inputs.items()):
        gate = deployment.gates[gate_index]
        channel = gate.channels[channel_index]
        for chunk in chunks:
            batch = channel.deserializer.add(decode_chunk(chunk))
            if batch is not None:
                add_input(gate, channel, batch[0], batch[1])


def reemit(
    deployment: TaskDeployment, writers: Sequence[RecordWriter], output_operators: Sequence[str]
) -> None:
    """Rescaled restore: emit the records of the old channels this subtask took over
    through their edges' record writers (each old channel deserialized over its chunks in
    stream order), then end each rescaled output with a blocking ``EndOfChannelStateEvent``."""
    for channel in deployment.reemit:
        output, where = channel.output, channel.description
        writer = writers[output]
        try:
            for values, stamps in channel_records(channel.chunks, where):
                writer.emit(values, stamps)
        except ValueError as err:
            raise RestoreError(
                f"{deployment.name}: cannot re-emit the in-flight data of operator "
                f"'{output_operators[output]}': {err}"
            ) from err
    for output in sorted(deployment.recovery_outputs):
        writers[output].broadcast_event(EndOfChannelStateEvent(), blocks=True)


def _check_shape(
    deployment: TaskDeployment,
    state: ChannelState,
    num_snapshots: int,
    partitions: Sequence[ResultPartition],
) -> None:
    vertex = deployment.vertex
    gates = tuple(len(g.channels) for g in deployment.gates)
    subpartitions = tuple(len(p.subpartitions) for p in partitions)
    taken = (state.subtask_index, state.parallelism, state.gate_channels, state.subpartitions)
    now = (deployment.subtask_index, vertex.parallelism, gates, subpartitions)
    if num_snapshots == 1 and taken == now:
        return
    raise StateError(
        f"{deployment.name}: checkpoint {state.checkpoint_id} holds in-flight data (unaligned "
        f"channel state) of operator '{vertex.name}' taken at parallelism "
        f"{state.parallelism} with {state.gate_channels} input channels per gate and "
        f"{state.subpartitions} subpartitions per output; it cannot be restored in "
        f"place at parallelism {vertex.parallelism} with {gates} and "
        f"{subpartitions} (the restore plan should have re-emitted it through the "
        f"producers)"
    )
