"""Restored output buffers (result-subpartition state) queued lazily, and a checkpoint taken
while they are being sent: bounded memory, order (restored before new output), and the rest
referred to in the old file instead of written again (FLIP-76, the output side)."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

from undertow.runtime.checkpoint.barrier import (
    AlignmentType,
    CheckpointBarrier,
    CheckpointOptions,
    SnapshotType,
)
from undertow.runtime.checkpoint.channel_recovery.stream import (
    HeldBytes,
    RestoredInputStream,
    RestoredRun,
    restored_channels,
)
from undertow.runtime.checkpoint.channel_state_files import ChannelStateFileWriter
from undertow.runtime.checkpoint.channel_state_handles import (
    ChannelStateHandles,
    MergedChannelStateHandle,
)
from undertow.runtime.checkpoint.channel_state_writer import decode_chunk, encode_chunk
from undertow.runtime.checkpoint.inflight_capture import (
    InflightCapture,
    PersistOutput,
    PersistOutputRun,
)
from undertow.runtime.network.buffer import Buffer
from undertow.runtime.network.credit import Send
from undertow.runtime.network.partition import ResultPartition, ResultSubpartition
from undertow.storage import CheckpointStorage

EXECUTOR = ThreadPoolExecutor(1, thread_name_prefix="test-restored-output")
WINDOW = 4
BLOCK = 64 * 1024


class Link:
    """The transport end of a subpartition: what it sent, in order."""

    def __init__(self) -> None:
        self.sent: list[Send] = []

    def deliver(self, send: Send) -> None:
        self.sent.append(send)


def chunk(i: int, size: int = 4096) -> bytes:
    body = i.to_bytes(4, "little") * ((size - 1) // 4)
    return encode_chunk(Buffer(body))


def write_output(
    store: CheckpointStorage, cid: int, chunks: list[bytes]
) -> MergedChannelStateHandle:
    """One subtask's output state of subpartition (0, 0) in checkpoint ``cid``."""

    async def body() -> ChannelStateHandles:
        writer = ChannelStateFileWriter(store.write_file, 5, 0, executor=EXECUTOR)
        sub = writer.register("map (1/1)")
        sub.start(cid)
        for c in chunks:
            sub.add_output(cid, (0, 0), c)
        sub.finish_input(cid)
        sub.finish_output(cid)
        return await asyncio.wait_for(sub.result(cid), 5)

    handle = asyncio.run(body()).output
    assert handle is not None
    return handle


def subpartition() -> tuple[ResultPartition, ResultSubpartition, Link]:
    partition = ResultPartition("P", [0], buffers_per_channel=2, floating_buffers=0,
                                max_buffers_per_channel=WINDOW)  # fmt: skip
    sp = partition.subpartitions[0]
    link = Link()
    sp.link = link
    return partition, sp, link


def sent_data(link: Link) -> list[bytes]:
    return [encode_chunk(s.payload) for s in link.sent if not s.is_event]  # type: ignore[arg-type]


def test_restored_output_is_queued_a_window_at_a_time_and_precedes_new_output() -> None:
    """8 MiB of restored output of one subpartition: at most one 64 KiB block of the file and
    ``WINDOW`` decoded buffers held at any time while the consumer drains it; what the task
    emits meanwhile (a buffer and an event) is sent after the last restored buffer."""
    store = CheckpointStorage.in_memory("job")
    chunks = [chunk(i) for i in range(2048)]
    handle = write_output(store, 1, chunks)
    held = HeldBytes()
    streams = restored_channels(handle, store.read_range, referencable=True, held=held,
                                block_bytes=BLOCK)  # fmt: skip
    partition, sp, link = subpartition()
    sp.restore_output(streams[(0, 0)], decode_chunk, WINDOW)
    assert sp.is_restoring and sp.sender.queued_data_buffers == WINDOW
    assert not partition.is_available()  # the task waits while restored output is queued
    live = Buffer(b"live")
    sp.add_buffers([live])
    sp.add_event("marker")
    most_queued = 0
    while sp.is_restoring or sp.sender.queued_data_buffers:
        sp.add_credit(3)
        most_queued = max(most_queued, sp.sender.queued_data_buffers)
    assert most_queued <= WINDOW
    assert 0 < held.peak <= BLOCK and held.now == 0
    assert sent_data(link) == [*chunks, encode_chunk(live)]
    assert link.sent[-1].payload == "marker"
    assert partition.queued == 0


def test_a_checkpoint_during_output_recovery_refers_to_what_is_not_yet_sent() -> None:
    """An unaligned barrier overtakes a subpartition restoring 1 MiB of output: the queued
    window and the held-back new buffer are written, the unsent rest of the old file is
    referred to (bytes referenced, not written), and restoring that checkpoint sends exactly
    the data the barrier overtook, in order."""
    store = CheckpointStorage.in_memory("job")
    chunks = [chunk(i) for i in range(256)]
    handle = write_output(store, 1, chunks)
    streams = restored_channels(handle, store.read_range, referencable=True, block_bytes=BLOCK)
    _, sp, link = subpartition()
    sp.restore_output(streams[(0, 0)], decode_chunk, WINDOW)
    sp.add_credit(10)  # ten restored buffers leave before the checkpoint
    live = Buffer(b"live")
    sp.add_buffers([live])
    barrier = CheckpointBarrier(
        2, 2, CheckpointOptions(SnapshotType.CHECKPOINT, AlignmentType.UNALIGNED)
    )
    capture = InflightCapture([], [1])
    assert capture.begin_output(barrier, [barrier], writer_open=False) is not None
    decisions = capture.overtaken(2, (0, 0), sp.overtake_with_priority_event(barrier))
    runs = [d for d in decisions if isinstance(d, PersistOutputRun)]
    assert [type(d) for d in decisions] == [PersistOutput] * WINDOW + [
        PersistOutputRun,
        PersistOutput,
    ]
    assert runs[0].refer and runs[0].run.referencable
    rest_bytes = sum(map(len, chunks[10 + WINDOW :]))
    assert runs[0].run.reference.length == rest_bytes

    async def body() -> ChannelStateHandles:
        writer = ChannelStateFileWriter(store.write_file, 5, 0, executor=EXECUTOR)
        sub = writer.register("map (1/1)")
        sub.start(2)
        sub.finish_input(2)
        for d in decisions:
            if isinstance(d, PersistOutputRun):
                sub.add_output_reference(2, d.channel, d.run.reference)
            else:
                assert isinstance(d, PersistOutput)
                sub.add_output(2, d.channel, d.chunk)
        sub.finish_output(2)
        return await asyncio.wait_for(sub.result(2), 5)

    taken = asyncio.run(body())
    assert taken.referenced_bytes == rest_bytes
    assert taken.persisted_bytes == sum(map(len, chunks[10 : 10 + WINDOW])) + len(
        encode_chunk(live)
    )
    assert taken.referenced_files() and taken.referenced_files()[0] == handle.file
    assert taken.output is not None
    again = restored_channels(taken.output, store.read_range, referencable=True)[(0, 0)]
    assert list(iter(again.next_chunk, None)) == [*chunks[10:], encode_chunk(live)]
    # the barrier went first, then the same data, which the consumer still gets
    while sp.is_restoring or sp.sender.queued_data_buffers:
        sp.add_credit(50)
    assert link.sent[10].payload is barrier
    assert sent_data(link) == [*chunks, encode_chunk(live)]


def test_an_aligned_barrier_held_back_behind_restored_output_turns_unaligned() -> None:
    """The aligned-checkpoint timeout fires while the barrier waits behind restored output:
    it is replaced by a priority barrier, and what was ahead of it (the queued window, the
    unsent rest as a run, the new buffer before it, not the one after) is the output state."""
    store = CheckpointStorage.in_memory("job")
    chunks = [chunk(i, 512) for i in range(40)]
    handle = write_output(store, 1, chunks)
    streams = restored_channels(handle, store.read_range, referencable=True, block_bytes=2048)
    _, sp, link = subpartition()
    sp.restore_output(streams[(0, 0)], decode_chunk, WINDOW)
    before, after = Buffer(b"before"), Buffer(b"after")
    aligned = CheckpointBarrier(3, 3, CheckpointOptions(SnapshotType.CHECKPOINT))
    sp.add_buffers([before])
    sp.add_event(aligned)
    sp.add_buffers([after])
    replacement = aligned.as_unaligned()
    ahead = sp.prioritize_event(aligned, replacement)
    assert ahead is not None
    assert [type(a) for a in ahead] == [Buffer] * WINDOW + [RestoredRun, Buffer]
    assert ahead[-1] is before
    run = ahead[WINDOW]
    assert isinstance(run, RestoredRun) and run.chunks() == chunks[WINDOW:]
    sp.add_credit(100)
    assert link.sent[0].payload is replacement
    assert all(s.payload is not aligned for s in link.sent)
    assert sent_data(link) == [*chunks, encode_chunk(before), encode_chunk(after)]


def test_restored_output_of_a_snapshot_not_the_jobs_own_is_read_whole() -> None:
    store = CheckpointStorage.in_memory("job")
    chunks = [chunk(i, 256) for i in range(8)]
    handle = write_output(store, 1, chunks)
    stream = restored_channels(handle, store.read_range, referencable=False)[(0, 0)]
    assert stream.rest() == chunks  # in memory: a checkpoint writes them again
    assert isinstance(stream, RestoredInputStream) and not stream.referencable
