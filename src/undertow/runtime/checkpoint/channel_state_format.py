"""The channel-state file format: laying out a group's file, and reading one region back.

File layout (version :data:`FILE_VERSION`)::

    b"UTCS"  uint16 LE version   then one region per (member, side) with state, in member
                                 registration order, input before output
    region = the side's channels in ascending order, each channel's chunks in add order

A region's position, length, sha256 and packed chunk lengths are in the member's
:class:`~.channel_state_handles.MergedChannelStateHandle`, so a reader fetches exactly its
range and verifies it (:func:`read_channel_state`) without reading the rest of the shared file.
The file's own sha256 (in the :class:`~undertow.storage.FileHandle`) covers the header too.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from undertow.runtime.checkpoint.channel_state_handles import (
    ChannelId,
    ChannelStateDirection,
    ChannelStateHandles,
    ChannelStateReference,
    MergedChannelStateHandle,
    build_handle,
)
from undertow.storage import CheckpointStorageError, CorruptCheckpointError, FileHandle

FILE_MAGIC = b"UTCS"
FILE_VERSION = 1
FILE_HEADER = struct.Struct("<4sH")

#: ``(checkpoint_id, file_name, data) -> handle``: blocking storage write.
WriteFile = Callable[[int, str, bytes], FileHandle]
#: ``(path, start, length) -> bytes``: blocking ranged read (``CheckpointStorage.read_range``).
ReadRange = Callable[[str, int, int], bytes]
Chunks = dict[ChannelId, list[bytes]]


@dataclass(frozen=True, slots=True)
class SubtaskContribution:
    """One member's state for one checkpoint, as handed to :func:`lay_out_group`."""

    subtask: str
    input: Chunks
    output: Chunks
    #: Runs of older files its input refers to (not written: FLIP-76).
    input_refs: tuple[ChannelStateReference, ...] = ()
    #: Runs of older files its output refers to (restored output not yet sent).
    output_refs: tuple[ChannelStateReference, ...] = ()

    @property
    def size(self) -> int:
        return sum(len(c) for side in (self.input, self.output) for cs in side.values() for c in cs)


#: One region as laid out: its side, its chunks, where it starts, its length and sha256.
_Region = tuple[ChannelStateDirection, Chunks, int, int, str]


@dataclass(frozen=True, slots=True)
class GroupLayout:
    """A group file's bytes and its members' regions (with their digests), not yet written:
    what :func:`lay_out` computes and :func:`write_layout` persists."""

    checkpoint_id: int
    contributions: list[SubtaskContribution]
    data: bytes
    regions: list[list[_Region]]


def lay_out(checkpoint_id: int, contributions: list[SubtaskContribution]) -> GroupLayout:
    """Lay out one group file and hash each region: CPU only, no I/O (the channel-state
    writer runs it on the loop thread for small groups, so that the I/O thread only writes)."""
    parts: list[bytes] = [FILE_HEADER.pack(FILE_MAGIC, FILE_VERSION)]
    position = FILE_HEADER.size
    laid_out: list[list[tuple[ChannelStateDirection, Chunks, int, int]]] = []
    for contribution in contributions:
        mine = []
        for direction, chunks in (
            (ChannelStateDirection.INPUT, contribution.input),
            (ChannelStateDirection.OUTPUT, contribution.output),
        ):
            ordered = [c for channel in sorted(chunks) for c in chunks[channel]]
            if not ordered:
                continue
            length = sum(map(len, ordered))
            mine.append((direction, chunks, position, length))
            parts.extend(ordered)
            position += length
        laid_out.append(mine)
    data = b"".join(parts)
    # One hash call per region, not per chunk: every call on more than 2 KiB releases the GIL,
    # and a thread that released it waits to get it back while another one runs Python code.
    view = memoryview(data)
    regions = [
        [(d, c, start, n, hashlib.sha256(view[start : start + n]).hexdigest())
         for d, c, start, n in regions_of_one]
        for regions_of_one in laid_out
    ]  # fmt: skip
    return GroupLayout(checkpoint_id, contributions, data, regions)


def write_layout(layout: GroupLayout, write: WriteFile | None,
                 file_name: str) -> list[ChannelStateHandles]:  # fmt: skip
    """Write ``layout`` as ``file_name`` (blocking: one storage write), or inline its regions
    when ``write`` is ``None``; the members' handles, in ``contributions`` order."""
    checkpoint_id, data = layout.checkpoint_id, layout.data
    file = None if write is None else write(checkpoint_id, file_name, data)
    if file is not None and file.size != len(data):
        raise CheckpointStorageError(
            f"channel-state file {file.path} of checkpoint {checkpoint_id}: storage reports "
            f"{file.size} bytes, {len(data)} were written"
        )
    result = []
    for contribution, placed in zip(layout.contributions, layout.regions):
        sides: dict[ChannelStateDirection, MergedChannelStateHandle] = {}
        refs = {ChannelStateDirection.INPUT: contribution.input_refs,
                ChannelStateDirection.OUTPUT: contribution.output_refs}  # fmt: skip
        for direction, chunks, start, length, sha in placed:
            inline = None if file is not None else data[start : start + length]
            sides[direction] = build_handle(
                contribution.subtask, checkpoint_id, direction, chunks,
                0 if inline is not None else start, sha, file=file, inline_data=inline,
                references=refs[direction],
            )  # fmt: skip
        for direction, side_refs in refs.items():
            if side_refs and direction not in sides:  # nothing written: refs only
                sides[direction] = build_handle(
                    contribution.subtask, checkpoint_id, direction, {}, 0, "",
                    references=side_refs,
                )  # fmt: skip
        result.append(
            ChannelStateHandles(
                sides.get(ChannelStateDirection.INPUT), sides.get(ChannelStateDirection.OUTPUT)
            )
        )
    return result


def lay_out_group(
    checkpoint_id: int,
    contributions: list[SubtaskContribution],
    write: WriteFile | None,
    file_name: str,
) -> list[ChannelStateHandles]:
    """Lay out, hash and (if ``write`` is given) write one group file; the members' handles.

    With ``write`` ``None`` the regions are inlined instead. Handles are returned in
    ``contributions`` order. Blocking when writing; pure otherwise.
    """
    return write_layout(lay_out(checkpoint_id, contributions), write, file_name)


def read_channel_state(
    handle: MergedChannelStateHandle, read_range: ReadRange
) -> Iterator[tuple[ChannelId, bytes]]:
    """Read and verify ``handle``'s region; then the chunks as ``(channel, bytes)`` in file
    order (ascending channel, each channel's chunks in write order).

    Blocking (one ranged read); run it off the loop. Verification happens before this returns,
    so nothing unverified is ever yielded: a short read or a sha256 mismatch raises
    :class:`CorruptCheckpointError` naming the file, checkpoint and subtask.
    """
    where = (
        f"channel state ({handle.direction.value}) of subtask {handle.subtask!r} in checkpoint "
        f"{handle.checkpoint_id}, {handle.location} [{handle.range_start}, "
        f"+{handle.range_length})"
    )
    if handle.inline_data is not None:
        data = handle.inline_data
    else:
        assert handle.file is not None
        try:
            data = read_range(handle.file.path, handle.range_start, handle.range_length)
        except (OSError, ValueError) as err:
            raise CorruptCheckpointError(
                f"cannot read {where}: {err}", checkpoint=handle.checkpoint_id,
                path=handle.location,
            ) from err  # fmt: skip
    actual = hashlib.sha256(data).hexdigest() if len(data) == handle.range_length else "n/a"
    if actual != handle.range_sha256:
        raise CorruptCheckpointError(
            f"corrupt {where}: read {len(data)} bytes with sha256 {actual}, expected "
            f"{handle.range_length} bytes with sha256 {handle.range_sha256}",
            checkpoint=handle.checkpoint_id,
            path=handle.location,
            expected=handle.range_sha256,
            actual=actual,
        )
    return _chunks(handle, memoryview(data))


def _chunks(
    handle: MergedChannelStateHandle, view: memoryview
) -> Iterator[tuple[ChannelId, bytes]]:
    for entry in handle.entries():
        start = entry.offset - handle.range_start
        yield entry.channel, bytes(view[start : start + entry.length])
