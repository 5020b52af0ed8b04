"""Restored channel state as a stream: one channel's chunks, read a bounded block at a time
(input channels, subpartitions' output, old channels re-emitted after a rescale).

A channel's restored input is a sequence of items in stream order: chunks in memory, or *runs*
(:class:`~..channel_state_handles.ChannelStateReference`, chunks in a verified file region).
:class:`RestoredInputStream` hands chunks out one at a time, reading runs a block of at most
``block_bytes`` at a time; :meth:`RestoredInputStream.rest` says what is left, as runs a new
checkpoint refers to (:class:`RestoredRun`, FLIP-76). :func:`scan_region` verifies regions
before any task runs. The longer story: docs/design.md, "Module notes", under this name.

Threading: a stream belongs to one task's loop thread (its reads are blocking, one ranged read
per block); :func:`scan_region` runs anywhere. Invariants: a stream holds at most one block (or
one chunk larger than a block) in memory, :class:`HeldBytes` counts it; a stream reads its
files lazily only if its runs are referencable (:func:`restored_input`), because only then does
every checkpoint completed meanwhile keep the files it has yet to read.
"""

from __future__ import annotations

import hashlib
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TypeAlias

from undertow.core.errors import RestoreError
from undertow.runtime.checkpoint.channel_state_format import ReadRange, read_channel_state
from undertow.runtime.checkpoint.channel_state_handles import (
    ChannelId,
    ChannelStateReference,
    MergedChannelStateHandle,
)
from undertow.runtime.checkpoint.channel_state_writer import RECOVERED
from undertow.storage import CorruptCheckpointError

#: Bytes one ranged read of a restored run fetches at most (unless one chunk is larger).
BLOCK_BYTES = 256 * 1024


class HeldBytes:
    """Bytes of restored input the streams of a worker hold in memory: now, and the most ever
    (a gauge for tests and metrics). Loop thread only."""

    def __init__(self) -> None:
        self.now = 0
        self.peak = 0

    def add(self, n: int) -> None:
        self.now += n
        self.peak = max(self.peak, self.now)

    def remove(self, n: int) -> None:
        self.now -= n


@dataclass(frozen=True, slots=True)
class RestoredRun:
    """What is left of a run when a checkpoint is taken: referred to by the new checkpoint if
    ``referencable`` (a file of this job's own checkpoint, which the coordinator keeps for as
    long as a retained checkpoint refers to it), else read and written again (:meth:`chunks`:
    the restored snapshot is not the job's to keep, or the checkpoint is a savepoint)."""

    reference: ChannelStateReference
    referencable: bool
    read_range: ReadRange

    def chunks(self) -> list[bytes]:
        """The run's chunks, read (blocking, one ranged read)."""
        ref = self.reference
        data = memoryview(self.read_range(ref.file.path, ref.start, ref.length))
        out, offset = [], 0
        for length in ref.lengths:
            out.append(bytes(data[offset : offset + length]))
            offset += length
        return out


#: One item of a channel's restored input: a chunk in memory, or a run in a file.
RestoredItem: TypeAlias = bytes | ChannelStateReference
#: What is left of a stream: chunks in memory (written again) and runs (referred to).
RestItem: TypeAlias = bytes | RestoredRun


class RestoredInputStream:
    """One channel's restored input chunks, in stream order, read lazily (module docstring).

    Lifecycle: built by the worker's channel recovery, consumed by the task's input processor
    (:meth:`next_chunk` until ``None``); :meth:`rest` may be asked at any time (a barrier).
    """

    __slots__ = ("_block", "_block_end", "_held", "_items", "_next", "_offset", "block_bytes",
                 "read_range", "referencable")  # fmt: skip

    def __init__(
        self,
        items: Iterable[RestoredItem],
        read_range: ReadRange | None = None,
        *,
        referencable: bool = False,
        block_bytes: int = BLOCK_BYTES,
        held: HeldBytes | None = None,
    ) -> None:
        self._items: deque[RestoredItem] = deque(items)
        if read_range is None and any(not isinstance(i, bytes) for i in self._items):
            raise ValueError("a restored stream with runs in files needs a read_range")
        self.read_range: ReadRange = read_range or _no_files
        self.referencable = referencable
        self.block_bytes = max(1, block_bytes)
        self._held = held or HeldBytes()
        #: The head run's loaded block: its bytes, the end of the chunk indices it holds, and
        #: the offset in it of chunk ``_next``.
        self._block: memoryview | None = None
        self._block_end = self._offset = 0
        #: Index of the head run's next chunk to hand out.
        self._next = 0

    @property
    def exhausted(self) -> bool:
        """Every chunk was handed out."""
        return not self._items

    def next_chunk(self) -> bytes | None:
        """The next chunk (``None`` once exhausted); reads the next block of a run when the
        loaded one is used up (blocking; raises what ``read_range`` raises)."""
        while self._items:
            head = self._items[0]
            if isinstance(head, bytes):
                self._items.popleft()
                return head
            if self._next >= len(head.lengths):
                self._drop_block()
                self._items.popleft()
                self._next = 0
                continue
            if self._block is None or self._next >= self._block_end:
                self._load(head)
            assert self._block is not None
            length = head.lengths[self._next]
            chunk = bytes(self._block[self._offset : self._offset + length])
            self._offset += length
            self._next += 1
            return chunk
        return None

    def rest(self) -> list[RestItem]:
        """What is left, in stream order: chunks in memory as they are, the rest of each run as
        a :class:`RestoredRun` (the loaded block is only a cache of it)."""
        rest: list[RestItem] = []
        for i, item in enumerate(self._items):
            if isinstance(item, bytes):
                rest.append(item)
                continue
            tail = item.tail(self._next) if i == 0 else item
            if tail is not None:
                rest.append(RestoredRun(tail.at(0), self.referencable, self.read_range))
        return rest

    def split(self, chunks: int) -> tuple[RestoredInputStream, RestoredInputStream]:
        """Two streams: the first ``chunks`` chunks, and the others (before any was handed
        out; the recovered input of every channel goes before the rest of any)."""
        head: list[RestoredItem] = []
        tail: list[RestoredItem] = []
        left = chunks
        for item in self._items:
            if isinstance(item, bytes):
                (head if left > 0 else tail).append(item)
                left -= 1
                continue
            take = max(0, min(left, len(item.lengths)))
            if take:
                head.append(item.head(take))
            rest = item.tail(take)
            if rest is not None:
                tail.append(rest)
            left -= take
        return self._like(head), self._like(tail)

    def fresh(self) -> RestoredInputStream:
        """Another stream of the same chunks, from the start (before any was handed out: a
        handle verified once serves every subtask that restores one of its channels)."""
        return self._like(list(self._items))

    def _like(self, items: list[RestoredItem]) -> RestoredInputStream:
        return RestoredInputStream(items, self.read_range, referencable=self.referencable,
                                   block_bytes=self.block_bytes, held=self._held)  # fmt: skip

    def _load(self, run: ChannelStateReference) -> None:
        self._drop_block()
        lengths = run.lengths
        end, size = self._next, 0
        while end < len(lengths) and (size == 0 or size + lengths[end] <= self.block_bytes):
            size += lengths[end]
            end += 1
        start = run.start + sum(lengths[: self._next])
        data = self.read_range(run.file.path, start, size)
        self._block, self._block_end, self._offset = memoryview(data), end, 0
        self._held.add(size)

    def _drop_block(self) -> None:
        if self._block is not None:
            self._held.remove(len(self._block))
            self._block = None


def _no_files(path: str, start: int, length: int) -> bytes:
    raise ValueError(f"no file can be read here ({path} [{start}, +{length}))")


def scan_region(
    read_range: ReadRange,
    path: str,
    start: int,
    length: int,
    sha256: str,
    flag_offsets: Sequence[int],
    where: str,
    block_bytes: int = BLOCK_BYTES,
) -> dict[int, int]:
    """Verify the region ``[start, +length)`` of ``path`` against ``sha256``, reading it in
    blocks (bounded memory), and return the byte at each of ``flag_offsets`` (absolute
    offsets inside the region: the chunks' flag bytes). Blocking. Raises
    :class:`CorruptCheckpointError` naming ``where`` on a short read or a mismatch."""
    digest = hashlib.sha256()
    wanted = sorted(set(flag_offsets))
    flags: dict[int, int] = {}
    i, position, end = 0, start, start + length
    try:
        while position < end:
            n = min(block_bytes, end - position)
            data = read_range(path, position, n)
            if len(data) != n:
                raise ValueError(f"read {len(data)} of {n} bytes at {position}")
            digest.update(data)
            while i < len(wanted) and wanted[i] < position + n:
                flags[wanted[i]] = data[wanted[i] - position]
                i += 1
            position += n
    except (OSError, ValueError) as err:
        raise CorruptCheckpointError(f"cannot read {where}: {err}", path=path) from err
    actual = digest.hexdigest()
    if actual != sha256:
        raise CorruptCheckpointError(
            f"corrupt {where}: sha256 {actual}, expected {sha256}",
            path=path, expected=sha256, actual=actual,
        )  # fmt: skip
    return flags


#: Per channel: its recovered input (re-emitted by an earlier rescaled restore, always first),
#: then the rest.
ChannelStreams: TypeAlias = dict[ChannelId, tuple[RestoredInputStream, RestoredInputStream]]


def restored_input(
    handle: MergedChannelStateHandle,
    read_range: ReadRange,
    *,
    referencable: bool,
    held: HeldBytes | None = None,
    block_bytes: int = BLOCK_BYTES,
) -> ChannelStreams:
    """Blocking (on the I/O pool): verify the regions ``handle`` (an input handle) lies in and
    refers to, each once by a streamed pass, and return per channel its lazy streams.

    Lazy only when ``referencable`` (a checkpoint of the job's own, whose files the coordinator
    keeps while a retained checkpoint refers to them, and every checkpoint completed during
    the recovery refers to what its task had not read yet). Otherwise the files may go while
    the task still reads (a claimed snapshot is deleted once subsumed; a NO_CLAIM snapshot's
    owner may delete it once the first checkpoint completed), so the chunks are read whole
    here, as before lazy reading.

    A channel's items are its written chunks up to each reference's position, the referenced
    run, then the rest. Raises :class:`CorruptCheckpointError` (a region) or
    :class:`~undertow.core.errors.RestoreError` (recovered input after other input: a
    checkpoint never writes that), naming checkpoint, subtask and channel."""
    where = (
        f"input channel state of subtask {handle.subtask!r} in checkpoint {handle.checkpoint_id}"
    )
    items, flags = _verified_items(handle, read_range, where, block_bytes)
    result: ChannelStreams = {}
    for channel, channel_items in sorted(items.items()):
        marks = [flags[(i.file.path, o)] if isinstance(i, ChannelStateReference) else i[0]
                 for i in channel_items for o in _chunk_offsets(i)]  # fmt: skip
        n = 0
        while n < len(marks) and marks[n] == RECOVERED:
            n += 1
        if RECOVERED in marks[n:]:
            raise RestoreError(
                f"{where} holds recovered input of input channel {channel} after other input "
                "of that channel; recovered input always comes first (the checkpoint is damaged)"
            )
        stream = RestoredInputStream(channel_items, read_range, referencable=referencable,
                                     held=held, block_bytes=block_bytes)  # fmt: skip
        head, tail = stream.split(n)
        if not referencable:  # read whole now: the files may go before the task is done
            head, tail = RestoredInputStream(_drain(head)), RestoredInputStream(_drain(tail))
        result[channel] = (head, tail)
    return result


def restored_channels(
    handle: MergedChannelStateHandle,
    read_range: ReadRange,
    *,
    referencable: bool,
    held: HeldBytes | None = None,
    block_bytes: int = BLOCK_BYTES,
) -> dict[ChannelId, RestoredInputStream]:
    """As :func:`restored_input` for any handle (restored output buffers of a subpartition,
    or an old channel a producer re-emits after a rescale): per channel one stream of its
    written chunks and the runs it refers to, in order, verified here (blocking), read lazily
    only when ``referencable`` (else whole now, for the reason given there)."""
    where = (
        f"{handle.direction.value} channel state of subtask {handle.subtask!r} in checkpoint "
        f"{handle.checkpoint_id}"
    )
    items, _ = _verified_items(handle, read_range, where, block_bytes)
    result: dict[ChannelId, RestoredInputStream] = {}
    for channel, channel_items in sorted(items.items()):
        stream = RestoredInputStream(channel_items, read_range, referencable=referencable,
                                     held=held, block_bytes=block_bytes)  # fmt: skip
        result[channel] = stream if referencable else RestoredInputStream(_drain(stream))
    return result


def _verified_items(
    handle: MergedChannelStateHandle, read_range: ReadRange, where: str, block_bytes: int
) -> tuple[dict[ChannelId, list[RestoredItem]], dict[tuple[str, int], int]]:
    """Per channel of ``handle``, its items (written chunks, referenced runs) in stream order,
    every region verified; and the flag byte at each run chunk's (file, offset)."""
    items: dict[ChannelId, list[RestoredItem]] = {}
    if handle.inline_data is not None:
        for channel, chunk in read_channel_state(handle, read_range):
            items.setdefault(channel, []).append(chunk)
    else:
        assert handle.file is not None
        for channel, run in _written_runs(handle).items():
            items[channel] = [run]
    refs: dict[ChannelId, list[ChannelStateReference]] = {}
    for ref in handle.references:  # ascending channel, then position
        refs.setdefault(ref.channel, []).append(ref)
    for channel, channel_refs in refs.items():
        items[channel] = _channel_items(items.get(channel, []), channel_refs, where)
    return items, _scan(items.values(), read_range, where, block_bytes)


def _drain(stream: RestoredInputStream) -> list[bytes]:
    return list(iter(stream.next_chunk, None))


def _written_runs(handle: MergedChannelStateHandle) -> dict[ChannelId, ChannelStateReference]:
    """Per channel, its written chunks in ``handle``'s file region as one run."""
    assert handle.file is not None
    runs: dict[ChannelId, tuple[int, list[int]]] = {}
    for entry in handle.entries():
        runs.setdefault(entry.channel, (entry.offset, []))[1].append(entry.length)
    return {
        channel: ChannelStateReference(
            channel,
            0,
            handle.file,
            handle.range_start,
            handle.range_length,
            handle.range_sha256,
            start,
            tuple(lengths),
        )
        for channel, (start, lengths) in runs.items()
    }


def _channel_items(
    written: list[RestoredItem], refs: list[ChannelStateReference], where: str
) -> list[RestoredItem]:
    """A channel's items: its ``written`` chunks (in memory, or one run of the handle's own
    region) with each of ``refs`` (ascending position) after ``position`` of them."""
    out: list[RestoredItem] = []
    done = 0  # written chunks placed so far
    queue = deque(written)
    for ref in refs:
        while done < ref.position:
            if not queue:
                raise RestoreError(
                    f"{where}: a reference of input channel {ref.channel} follows written "
                    f"chunk {ref.position}, but the channel has only {done}"
                )
            item = queue.popleft()
            if isinstance(item, bytes):
                out.append(item)
                done += 1
                continue
            take = min(ref.position - done, len(item.lengths))
            out.append(item.head(take))
            done += take
            rest = item.tail(take)
            if rest is not None:
                queue.appendleft(rest)
        out.append(ref.at(0))
    out.extend(queue)
    return out


def _chunk_offsets(item: RestoredItem) -> list[int]:
    if isinstance(item, bytes):
        return [0]
    offsets, offset = [], item.start
    for length in item.lengths:
        offsets.append(offset)
        offset += length
    return offsets


def _scan(
    channels: Iterable[list[RestoredItem]], read_range: ReadRange, where: str, block_bytes: int
) -> dict[tuple[str, int], int]:
    """Verify each region the runs lie in once; the flag byte at every run chunk's
    (file, offset)."""
    regions: dict[tuple[str, int, int, str], list[int]] = {}
    for channel_items in channels:
        for item in channel_items:
            if isinstance(item, ChannelStateReference):
                key = (item.file.path, item.region_start, item.region_length, item.region_sha256)
                regions.setdefault(key, []).extend(_chunk_offsets(item))
    flags: dict[tuple[str, int], int] = {}
    for (path, start, length, sha), offsets in regions.items():
        found = scan_region(read_range, path, start, length, sha, offsets,
                            f"{where}, {path} [{start}, +{length})", block_bytes)  # fmt: skip
        flags.update(((path, offset), flag) for offset, flag in found.items())
    return flags
