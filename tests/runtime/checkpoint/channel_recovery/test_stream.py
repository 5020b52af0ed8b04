"""Restored input as a lazy stream: bounded memory, verified regions, referenced rests, and
references spliced among written chunks in stream order."""

from __future__ import annotations

import asyncio
import hashlib
from concurrent.futures import ThreadPoolExecutor

import pytest

from undertow.core.errors import RestoreError
from undertow.runtime.checkpoint.channel_recovery.stream import (
    HeldBytes,
    RestoredInputStream,
    RestoredRun,
    restored_input,
)
from undertow.runtime.checkpoint.channel_state_files import ChannelStateFileWriter
from undertow.runtime.checkpoint.channel_state_handles import (
    ChannelStateDirection,
    ChannelStateHandles,
    ChannelStateReference,
    MergedChannelStateHandle,
    build_handle,
)
from undertow.runtime.checkpoint.channel_state_writer import encode_recovered_chunk
from undertow.storage import CheckpointStorage, CorruptCheckpointError

EXECUTOR = ThreadPoolExecutor(1, thread_name_prefix="test-restored-stream")
CHUNK = 4096


class CountingStorage(CheckpointStorage):
    """Counts the bytes each ranged read fetched."""

    def __init__(self, root: str, job: str) -> None:
        super().__init__(root, job)
        self.largest_read = 0

    def read_range(self, path: str, start: int, length: int) -> bytes:
        self.largest_read = max(self.largest_read, length)
        return super().read_range(path, start, length)


def storage() -> CountingStorage:
    return CountingStorage(CheckpointStorage.in_memory().root_uri, "job")


def write_input(
    store: CheckpointStorage, cid: int, inputs: dict[tuple[int, int], list[bytes]],
    refs: tuple[ChannelStateReference, ...] = (),
) -> MergedChannelStateHandle:  # fmt: skip
    """One subtask's input state of checkpoint ``cid``, written to a channel-state file
    (``refs`` spliced after each channel's chunks, as a checkpoint during recovery does)."""

    async def body() -> ChannelStateHandles:
        writer = ChannelStateFileWriter(store.write_file, 5, 0, executor=EXECUTOR)
        sub = writer.register("map (1/1)")
        sub.start(cid)
        for channel, chunks in inputs.items():
            for chunk in chunks:
                sub.add_input(cid, channel, chunk)
        for ref in refs:
            sub.add_input_reference(cid, ref.channel, ref)
        sub.finish_input(cid)
        sub.finish_output(cid)
        return await asyncio.wait_for(sub.result(cid), 5)

    handle = asyncio.run(body()).input
    assert handle is not None
    return handle


def chunk(i: int, size: int = CHUNK) -> bytes:
    return b"\x00" + i.to_bytes(4, "little") * ((size - 1) // 4) + b"\x00" * ((size - 1) % 4)


def drain(stream: RestoredInputStream) -> list[bytes]:
    return list(iter(stream.next_chunk, None))


def test_a_large_restored_channel_is_read_a_block_at_a_time() -> None:
    """8 MiB of restored input, read back with 64 KiB blocks: never more than one block held
    (the memory bound), every read at most a block (the verifying pass too), every chunk in
    order."""
    store = storage()
    chunks = [chunk(i) for i in range(2048)]
    handle = write_input(store, 1, {(0, 0): chunks})
    held = HeldBytes()
    streams = restored_input(handle, store.read_range, referencable=True, held=held,
                             block_bytes=64 * 1024)  # fmt: skip
    recovered, rest = streams[(0, 0)]
    assert recovered.exhausted
    assert drain(rest) == chunks
    assert 0 < held.peak <= 64 * 1024
    assert held.now == 0
    assert store.largest_read <= 64 * 1024


def test_what_is_left_is_a_run_of_the_old_file_and_reads_back_the_same_chunks() -> None:
    store = storage()
    chunks = [chunk(i, 100) for i in range(10)]
    handle = write_input(store, 1, {(0, 1): chunks})
    _, stream = restored_input(handle, store.read_range, referencable=True,
                               block_bytes=300)[(0, 1)]  # fmt: skip
    assert [stream.next_chunk() for _ in range(4)] == chunks[:4]
    [run] = stream.rest()
    assert isinstance(run, RestoredRun) and run.referencable
    assert run.reference.file == handle.file and run.reference.lengths == (100,) * 6
    assert run.chunks() == chunks[4:]
    assert drain(stream) == chunks[4:]  # the rest is still there to consume
    assert stream.rest() == []


def test_a_handle_referring_to_an_older_file_restores_written_then_referenced_then_written() -> (
    None
):
    """A checkpoint during recovery wrote a channel's unprocessed batch and partial record,
    referred to the old file's undecoded chunks, then wrote the live buffers queued after."""
    store = storage()
    old = [chunk(i, 64) for i in range(6)]
    old_handle = write_input(store, 1, {(0, 0): old})
    _, old_stream = restored_input(old_handle, store.read_range, referencable=True)[(0, 0)]
    drain_two = [old_stream.next_chunk(), old_stream.next_chunk()]
    [run] = old_stream.rest()
    assert isinstance(run, RestoredRun)

    async def body() -> ChannelStateHandles:
        writer = ChannelStateFileWriter(store.write_file, 5, 0, executor=EXECUTOR)
        sub = writer.register("map (1/1)")
        sub.start(2)
        sub.add_input(2, (0, 0), b"\x00batch-in-hand")
        sub.add_input_reference(2, (0, 0), run.reference)
        sub.add_input(2, (0, 0), b"\x00live")
        sub.finish_input(2)
        sub.finish_output(2)
        return await asyncio.wait_for(sub.result(2), 5)

    handle = asyncio.run(body()).input
    assert handle is not None and handle.referenced_bytes == 4 * 64
    assert handle.range_length == len(b"\x00batch-in-hand") + len(b"\x00live")
    _, stream = restored_input(handle, store.read_range, referencable=True)[(0, 0)]
    assert drain(stream) == [b"\x00batch-in-hand", *old[2:], b"\x00live"]
    assert drain_two == old[:2]


def test_a_checkpoint_of_nothing_but_references_writes_no_file() -> None:
    store = storage()
    old_handle = write_input(store, 1, {(0, 0): [chunk(1, 64)]})
    [run] = RestoredInputStream([_own_run(old_handle)], store.read_range, referencable=True).rest()
    assert isinstance(run, RestoredRun)
    handle = write_input(store, 2, {}, (run.reference,))
    assert handle.file is None and handle.range_length == 0 and handle.inline_data == b""
    assert handle.referenced_bytes == 64


def _own_run(handle: MergedChannelStateHandle) -> ChannelStateReference:
    assert handle.file is not None
    lengths = tuple(e.length for e in handle.entries())
    return ChannelStateReference((0, 0), 0, handle.file, handle.range_start,
                                 handle.range_length, handle.range_sha256, handle.range_start,
                                 lengths)  # fmt: skip


def test_a_corrupt_referenced_region_fails_before_any_chunk_is_used() -> None:
    store = storage()
    old_handle = write_input(store, 1, {(0, 0): [chunk(1, 64), chunk(2, 64)]})
    ref = _own_run(old_handle)
    handle = write_input(store, 2, {(0, 0): [b"\x00x"]}, (ref,))
    assert old_handle.file is not None
    path = old_handle.file.path
    data = bytearray(store.read_range(path, 0, old_handle.file.size))
    data[-1] ^= 1
    store.write_file(1, path.rsplit("/", 1)[1], bytes(data))
    with pytest.raises(CorruptCheckpointError, match=path):
        restored_input(handle, store.read_range, referencable=True)


def test_recovered_input_is_split_off_and_must_come_first() -> None:
    store = storage()
    rec = encode_recovered_chunk(b"re-emitted")
    handle = write_input(store, 1, {(0, 0): [rec, rec, b"\x00own"]})
    recovered, rest = restored_input(handle, store.read_range, referencable=False)[(0, 0)]
    assert drain(recovered) == [rec, rec] and drain(rest) == [b"\x00own"]
    damaged = write_input(store, 2, {(0, 0): [b"\x00own", rec]})
    with pytest.raises(RestoreError, match=r"checkpoint 2 holds recovered input of input channel"):
        restored_input(damaged, store.read_range, referencable=False)


def test_inline_state_is_chunks_in_memory_and_never_a_reference() -> None:
    data = b"\x00abc"
    handle = build_handle("map (1/1)", 3, ChannelStateDirection.INPUT, {(0, 0): [data]}, 0,
                          hashlib.sha256(data).hexdigest(), inline_data=data)  # fmt: skip
    _, stream = restored_input(handle, storage().read_range, referencable=True)[(0, 0)]
    assert stream.rest() == [data]
    assert drain(stream) == [data]


def test_a_snapshot_not_the_jobs_own_is_read_whole_at_restore() -> None:
    """Restored from a path (CLAIM, NO_CLAIM), the files may go while the task still reads:
    the chunks are read before the task runs, and nothing of them is a run to refer to."""
    store = storage()
    chunks = [chunk(i, 100) for i in range(5)]
    handle = write_input(store, 1, {(0, 0): chunks})
    _, stream = restored_input(handle, store.read_range, referencable=False)[(0, 0)]
    assert handle.file is not None
    fs, path = store._open_uri(store.job_file_uri(handle.file.path))
    fs.rm_file(path)  # a NO_CLAIM snapshot's owner deleted it
    assert stream.rest() == chunks
    assert drain(stream) == chunks
