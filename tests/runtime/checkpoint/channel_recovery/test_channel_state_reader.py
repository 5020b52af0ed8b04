"""The channel-state reader: in-place state without rescaled channels, re-emitted streams in
order with each handle read once, corruption caught before use, shapes checked on attach."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import pytest

from undertow.core.errors import RestoreError
from undertow.graph.job_graph import JobVertex
from undertow.graph.partitioners import RebalancePartitioner
from undertow.runtime.checkpoint.channel_recovery.reader import (
    ChannelStateReader,
    RestoredChannels,
    with_channel_state,
)
from undertow.runtime.checkpoint.channel_recovery.rescale import OldChannel, ReemitChannel
from undertow.runtime.checkpoint.channel_recovery.stream import (
    RestoredInputStream,
    RestoredRun,
    restored_channels,
    restored_input,
)
from undertow.runtime.checkpoint.channel_state_files import ChannelStateFileWriter
from undertow.runtime.checkpoint.channel_state_handles import ChannelStateHandles
from undertow.runtime.network.input_gate import InputGate
from undertow.runtime.network.partition import ResultPartition
from undertow.runtime.network.record_writer import RecordWriter
from undertow.storage import CheckpointStorage, CorruptCheckpointError

EXECUTOR = ThreadPoolExecutor(2, thread_name_prefix="test-channel-state-reader")
CID = 3


@dataclass
class Assignment:
    """The fields of a ``RestoreAssignment`` the reader reads."""

    checkpoint_dir: str
    job_id: str
    checkpoint_id: int = CID
    channel_state: dict[tuple[int, int], ChannelStateHandles] = field(default_factory=dict)
    reemit: dict[tuple[int, int], tuple[ReemitChannel, ...]] = field(default_factory=dict)
    rescaled_gates: dict[int, frozenset[int]] = field(default_factory=dict)
    rescaled_outputs: dict[int, frozenset[int]] = field(default_factory=dict)
    refers_to_channel_state: bool = True


class CountingStorage(CheckpointStorage):
    reads = 0

    def read_range(self, path: str, start: int, length: int) -> bytes:
        type(self).reads += 1
        return super().read_range(path, start, length)


def write_state(
    storage: CheckpointStorage,
    inputs: dict[tuple[int, int], list[bytes]],
    outputs: dict[tuple[int, int], list[bytes]],
) -> ChannelStateHandles:
    """One subtask's channel state of checkpoint CID, written to a shared file."""

    async def body() -> ChannelStateHandles:
        writer = ChannelStateFileWriter(storage.write_file, 5, 0, executor=EXECUTOR)
        sub = writer.register("writer (1/1)")
        sub.start(CID)
        for channel, chunks in inputs.items():
            for chunk in chunks:
                sub.add_input(CID, channel, chunk)
        for channel, chunks in outputs.items():
            for chunk in chunks:
                sub.add_output(CID, channel, chunk)
        sub.finish_input(CID)
        sub.finish_output(CID)
        return await asyncio.wait_for(sub.result(CID), 5)

    return asyncio.run(body())


def storage_pair() -> tuple[CountingStorage, Assignment]:
    root = CheckpointStorage.in_memory().root_uri
    CountingStorage.reads = 0
    return CountingStorage(root, "job"), Assignment(root, "job")


def test_in_place_state_leaves_out_rescaled_channels_and_other_workers() -> None:
    storage, assignment = storage_pair()
    handles = write_state(
        storage,
        {(0, 0): [b"\x00in-a"], (1, 0): [b"\x00in-rescaled"]},
        {(0, 1): [b"\x01out-", b"\x00b"], (2, 0): [b"\x00out-rescaled"]},
    )
    assignment.channel_state = {(7, 0): handles, (7, 1): handles}
    assignment.rescaled_gates = {7: frozenset({1})}
    assignment.rescaled_outputs = {7: frozenset({2})}
    reader = ChannelStateReader(assignment, {(7, 0)}, EXECUTOR, storage)
    got = asyncio.run(reader.read_in_place())
    assert set(got) == {(7, 0)}
    assert {c: drain(s) for c, s in got[(7, 0)].inputs.items()} == {(0, 0): [b"\x00in-a"]}
    outputs = {c: list(iter(s.next_chunk, None)) for c, s in got[(7, 0)].outputs.items()}
    assert outputs == {(0, 1): [b"\x01out-", b"\x00b"]}


def drain(streams: tuple[RestoredInputStream, RestoredInputStream]) -> list[bytes]:
    """A channel's restored input chunks, recovered first."""
    return [c for s in streams for c in iter(s.next_chunk, None)]


def test_reemitted_stream_is_input_then_output_and_each_handle_is_read_once() -> None:
    storage, assignment = storage_pair()
    consumer = write_state(storage, {(0, 0): [b"\x00i0"], (0, 1): [b"\x00i1"]}, {})
    producer = write_state(storage, {}, {(0, 0): [b"\x00o0"], (0, 1): [b"\x00o1"]})
    channels = tuple(
        ReemitChannel(OldChannel(9, 0, 0, p, 0), consumer.input, producer.output) for p in (0, 1)
    )
    assignment.reemit = {(4, 0): channels, (4, 1): channels}
    reader = ChannelStateReader(assignment, {(4, 0)}, EXECUTOR, storage)
    got = asyncio.run(reader.read_reemitted())
    assert set(got) == {(4, 0)} and CountingStorage.reads == 2  # each region verified once
    chunks = [(output, [c for s in streams for c in iter(s.next_chunk, None)])
              for output, streams, _ in got[(4, 0)]]  # fmt: skip
    assert chunks == [(0, [b"\x00i0", b"\x00o0"]), (0, [b"\x00i1", b"\x00o0"])]
    assert "checkpoint 3, edge 9, old channel 1 -> 0" in got[(4, 0)][1][2]


def test_corrupt_region_fails_before_any_chunk_is_used() -> None:
    storage, assignment = storage_pair()
    handles = write_state(storage, {(0, 0): [b"\x00" + b"x" * 40]}, {})
    assert handles.input is not None and handles.input.file is not None
    path = handles.input.file.path
    data = bytearray(storage.read_range(path, 0, handles.input.file.size))
    data[-1] ^= 1
    storage.write_file(CID, path.rsplit("/", 1)[1], bytes(data))
    assignment.channel_state = {(1, 0): handles}
    reader = ChannelStateReader(assignment, {(1, 0)}, EXECUTOR, storage)
    with pytest.raises(CorruptCheckpointError, match=path):
        asyncio.run(reader.read_in_place())


def streams(*chunks: bytes) -> tuple[RestoredInputStream, RestoredInputStream]:
    return RestoredInputStream([]), RestoredInputStream(chunks)


def test_attach_checks_that_every_channel_exists() -> None:
    vertex = JobVertex(1, "map", 2, 128, "default", 100, (), (), ())
    gate = InputGate("g", 0, 0)
    gate.add_channel(0, "c0", 2)
    partition = ResultPartition("p", [0, 1], buffers_per_channel=2, floating_buffers=0,
                                max_buffers_per_channel=10)  # fmt: skip
    writer = RecordWriter(partition, RebalancePartitioner(), 1024)
    fits = RestoredChannels(CID, {(0, 0): streams(b"\x00a")},
                            {(0, 1): RestoredInputStream([b"\x00b"])})  # fmt: skip
    [snapshot] = with_channel_state(vertex, 1, None, [gate], [writer], fits)
    assert snapshot.channel_state is not None
    assert snapshot.channel_state.gate_channels == (1,)
    assert snapshot.channel_state.subpartitions == (2,)
    assert snapshot.channel_state.outputs == {}  # a stream: ``for_subtask``
    stray = RestoredChannels(CID, {(0, 1): streams(b"\x00a")}, {})
    message = r"map \(2/2\): checkpoint 3 holds input channel state of channel \(0, 1\), which"
    with pytest.raises(RestoreError, match=message):
        with_channel_state(vertex, 1, None, [gate], [writer], stray)


def test_reemitted_channels_include_what_a_checkpoint_during_recovery_referred_to() -> None:
    """An old channel whose state a checkpoint during recovery partly referred to (input and
    output runs of an older file), re-emitted after a rescale: its stream is the written
    chunks with the referred runs in place (before, the references were left out)."""
    storage, assignment = storage_pair()
    older = write_state(storage, {(0, 0): [b"\x00r1", b"\x00r2"]}, {(0, 0): [b"\x00s1"]})
    assert older.input is not None and older.output is not None
    _, rest = restored_input(older.input, storage.read_range, referencable=True)[(0, 0)]
    [in_run] = rest.rest()
    [out_run] = restored_channels(older.output, storage.read_range, referencable=True)[
        (0, 0)
    ].rest()
    assert isinstance(in_run, RestoredRun) and isinstance(out_run, RestoredRun)

    async def body() -> ChannelStateHandles:
        writer = ChannelStateFileWriter(storage.write_file, 5, 0, executor=EXECUTOR)
        sub = writer.register("writer (1/1)")
        sub.start(CID + 1)
        sub.add_input(CID + 1, (0, 0), b"\x00in-hand")
        sub.add_input_reference(CID + 1, (0, 0), in_run.reference)
        sub.finish_input(CID + 1)
        sub.add_output_reference(CID + 1, (0, 0), out_run.reference)
        sub.add_output(CID + 1, (0, 0), b"\x00new")
        sub.finish_output(CID + 1)
        return await asyncio.wait_for(sub.result(CID + 1), 5)

    taken = asyncio.run(body())
    assert taken.output is not None and taken.output.references
    channel = ReemitChannel(OldChannel(9, 0, 0, 0, 0), taken.input, taken.output)
    assignment.reemit = {(4, 0): (channel,)}
    got = asyncio.run(ChannelStateReader(assignment, {(4, 0)}, EXECUTOR, storage).read_reemitted())
    [(_, streams, _)] = got[(4, 0)]
    chunks = [c for s in streams for c in iter(s.next_chunk, None)]
    assert chunks == [b"\x00in-hand", b"\x00r1", b"\x00r2", b"\x00s1", b"\x00new"]
