"""The in-memory channel-state writer: lifecycle, order, abort, result hand-over, chunks."""

from __future__ import annotations

import pickle

import pytest

from undertow.runtime.checkpoint.barrier import (
    NO_TIMEOUT,
    AlignmentType,
    CheckpointOptions,
    SnapshotType,
)
from undertow.runtime.checkpoint.channel_state_writer import (
    ChannelStateWriter,
    decode_chunk,
    encode_chunk,
)
from undertow.runtime.checkpoint.snapshot import ChannelState, SubtaskSnapshot
from undertow.runtime.network.buffer import Buffer
from undertow.testing.channel_state import InMemoryChannelStateWriter


def _writer() -> InMemoryChannelStateWriter:
    return InMemoryChannelStateWriter(1, 2, (2,), (3,))


def test_result_after_both_sides_in_stream_order() -> None:
    writer: ChannelStateWriter = _writer()
    results: list[ChannelState] = []
    writer.start(7)
    writer.add_input(7, (0, 1), b"a")
    writer.add_output(7, (0, 2), b"x")
    writer.add_input(7, (0, 1), b"b")
    writer.add_input(7, (0, 0), b"c")
    writer.when_finished(7, results.append)
    writer.finish_output(7)
    assert results == []
    writer.finish_input(7)
    [state] = results
    assert state.checkpoint_id == 7
    assert state.inputs == {(0, 1): (b"a", b"b"), (0, 0): (b"c",)}
    assert state.outputs == {(0, 2): (b"x",)}
    assert (state.input_bytes, state.output_bytes) == (3, 1)
    assert (state.subtask_index, state.parallelism) == (1, 2)
    assert (state.gate_channels, state.subpartitions) == ((2,), (3,))
    assert not writer.is_started(7)


def test_result_kept_until_asked_for() -> None:
    writer = _writer()
    writer.start(1)
    writer.finish_input(1)
    writer.finish_output(1)
    assert writer.is_started(1)
    results: list[ChannelState] = []
    writer.when_finished(1, results.append)
    assert len(results) == 1 and results[0].is_empty
    assert not writer.is_started(1)


def test_data_after_finishing_a_side_or_for_unknown_checkpoints_is_ignored() -> None:
    writer = _writer()
    writer.add_input(3, (0, 0), b"never started")
    writer.start(3)
    writer.finish_input(3)
    writer.add_input(3, (0, 0), b"late")
    writer.add_output(3, (0, 0), b"")
    writer.add_output(3, (0, 1), b"out")
    results: list[ChannelState] = []
    writer.when_finished(3, results.append)
    writer.finish_output(3)
    assert results[0].inputs == {} and results[0].outputs == {(0, 1): (b"out",)}


def test_abort_drops_data_and_never_calls_back() -> None:
    writer = _writer()
    results: list[ChannelState] = []
    writer.start(4)
    writer.add_input(4, (0, 0), b"a")
    writer.when_finished(4, results.append)
    writer.abort(4)
    writer.add_input(4, (0, 0), b"b")
    writer.finish_input(4)
    writer.finish_output(4)
    assert results == [] and not writer.is_started(4)
    with pytest.raises(KeyError, match="checkpoint 4"):
        writer.when_finished(4, results.append)


def test_a_newer_checkpoint_drops_older_unfinished_ones() -> None:
    writer = _writer()
    writer.start(5)
    writer.add_input(5, (0, 0), b"old")
    writer.start(6)
    assert not writer.is_started(5) and writer.is_started(6)
    writer.finish_input(5)  # ignored
    writer.finish_output(5)


@pytest.mark.parametrize("partial", [False, True])
def test_chunks_keep_buffer_boundaries(partial: bool) -> None:
    buffer = decode_chunk(encode_chunk(Buffer(b"\x00\x01payload", partial)))
    assert buffer.data == b"\x00\x01payload" and buffer.partial is partial
    with pytest.raises(ValueError, match="not a channel-state chunk"):
        decode_chunk(b"\x07abc")
    with pytest.raises(ValueError, match="empty"):
        decode_chunk(b"")


def test_snapshot_carries_channel_state_and_old_snapshots_unpickle() -> None:
    state = ChannelState(1, 0, 1, (1,), (), {(0, 0): (b"\x00x",)})
    restored = pickle.loads(pickle.dumps(SubtaskSnapshot(channel_state=state)))
    assert restored.channel_state == state
    old = SubtaskSnapshot()
    del old.__dict__["channel_state"]  # as written before the field existed
    assert pickle.loads(pickle.dumps(old)).channel_state is None


def test_forced_aligned_round_trip_of_options() -> None:
    unaligned = CheckpointOptions.for_config(SnapshotType.CHECKPOINT, True, True, 0)
    forced = unaligned.with_unaligned_unsupported()
    assert forced.alignment is AlignmentType.FORCED_ALIGNED and forced.needs_alignment
    assert not forced.needs_channel_state and not forced.is_timeoutable
    assert forced.with_unaligned_supported() == unaligned
    timeoutable = CheckpointOptions.for_config(SnapshotType.CHECKPOINT, True, True, 5)
    assert timeoutable.needs_channel_state
    assert timeoutable.with_unaligned_unsupported().with_unaligned_supported() == timeoutable
    aligned = CheckpointOptions.for_config(SnapshotType.CHECKPOINT, True, False, 0)
    assert aligned.with_unaligned_unsupported() == aligned
    savepoint = CheckpointOptions.for_config(SnapshotType.SAVEPOINT, True, True, 0)
    assert savepoint.aligned_checkpoint_timeout == NO_TIMEOUT and not savepoint.needs_channel_state
