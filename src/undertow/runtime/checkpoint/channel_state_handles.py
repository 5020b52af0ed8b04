"""Merged channel-state handles: one per (subtask, file, direction), offsets packed.

Rationale (reference §3.5, FLINK-33734): with one handle per channel, every handle repeats the
shared file's path, so an all-to-all job at parallelism P writes P² paths into ``_metadata``
(68 % of a 950 MB metadata file in Flink's production case). A
:class:`MergedChannelStateHandle` names the file once and packs the subtask's channels and
chunk lengths into one little-endian ``uint32`` array.

Packed channel array, ``uint32`` little-endian, per channel in strictly ascending channel
order::

    a, b, n, len_1, ..., len_n     channel (a, b); n >= 1 chunks of len_i >= 1 bytes

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import base64
import binascii
import enum
import re
import sys
from array import array
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from undertow.storage import FileHandle

#: An input channel: ``(gate_index, channel_index)`` (Flink's ``InputChannelInfo``).
InputChannelId: TypeAlias = tuple[int, int]
#: An output channel: ``(partition_index, subpartition_index)`` (``ResultSubpartitionInfo``).
OutputChannelId: TypeAlias = tuple[int, int]
#: Either kind; the handle's ``direction`` says which.
ChannelId: TypeAlias = tuple[int, int]

JSON_VERSION = 1
_U32_MAX = 0xFFFFFFFF
_SHA256_HEX = re.compile(r"^[0-9a-f]{64}$")
_JSON_KEYS = frozenset(
    {"v", "subtask", "checkpoint", "direction", "file", "inline", "start", "length", "sha256",
     "channels"}
)  # fmt: skip


class ChannelStateDirection(enum.Enum):
    INPUT = "input"
    OUTPUT = "output"


@dataclass(frozen=True, slots=True)
class ChannelStateEntry:
    """One chunk: ``length`` bytes of ``channel`` at ``offset`` (in the file, or in the
    inline bytes)."""

    channel: ChannelId
    offset: int
    length: int


def pack_channels(chunks: Sequence[tuple[ChannelId, Sequence[int]]]) -> bytes:
    """Pack ``[(channel, [chunk lengths...]), ...]`` (ascending channels) into the array."""
    words = array("I")
    for (a, b), lengths in chunks:
        words.extend((a, b, len(lengths)))
        words.extend(lengths)
    if sys.byteorder != "little":
        words.byteswap()
    return words.tobytes()


def _words(packed: bytes) -> array[int]:
    words = array("I")
    words.frombytes(packed)
    if sys.byteorder != "little":
        words.byteswap()
    return words


@dataclass(frozen=True, slots=True)
class MergedChannelStateHandle:
    """One subtask's channel state of one direction in one file (or inline).

    Exactly one of ``file`` (the shared file; the region lies inside it) and ``inline_data``
    (then ``range_start`` is 0 and the region is all of it) is set. ``subtask`` names the
    subtask that wrote the state (for errors); the metadata keys handles by subtask index.
    Invariants, checked on construction (:class:`ValueError` naming subtask and checkpoint):
    ``range_length >= 1``, the region lies inside the file, ``range_sha256`` is 64 lowercase
    hex digits, and ``packed_channels`` is a well-formed array whose lengths sum to
    ``range_length``. The sha256 itself is checked by the reader, which has the bytes.
    """

    subtask: str
    checkpoint_id: int
    direction: ChannelStateDirection
    file: FileHandle | None
    inline_data: bytes | None
    range_start: int
    range_length: int
    range_sha256: str
    packed_channels: bytes

    def __post_init__(self) -> None:
        if not isinstance(self.direction, ChannelStateDirection):
            self._invalid(f"direction must be a ChannelStateDirection, got {self.direction!r}")
        for name in ("checkpoint_id", "range_start", "range_length"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                self._invalid(f"{name} must be a non-negative int, got {value!r}")
        if self.range_length == 0:
            self._invalid("range_length must be >= 1 (empty state has no handle)")
        if (self.file is None) == (self.inline_data is None):
            self._invalid("exactly one of file and inline_data must be set")
        if self.file is not None and self.range_start + self.range_length > self.file.size:
            self._invalid(
                f"range [{self.range_start}, {self.range_start + self.range_length}) exceeds "
                f"file {self.file.path} of {self.file.size} bytes"
            )
        if self.inline_data is not None and (
            self.range_start != 0 or len(self.inline_data) != self.range_length
        ):
            self._invalid(
                f"inline data of {len(self.inline_data)} bytes does not match range "
                f"start {self.range_start} length {self.range_length}"
            )
        if not isinstance(self.range_sha256, str) or not _SHA256_HEX.match(self.range_sha256):
            self._invalid(
                f"range_sha256 must be 64 lowercase hex digits, got {self.range_sha256!r}"
            )
        self._check_packed()

    @property
    def location(self) -> str:
        """What errors call the region: the file path, or ``inline``."""
        return "inline" if self.file is None else self.file.path

    def _invalid(self, problem: str) -> None:
        raise ValueError(
            f"channel-state handle of subtask {self.subtask!r}, checkpoint "
            f"{self.checkpoint_id!r}, {getattr(self.direction, 'value', self.direction)}: "
            f"{problem}"
        )

    def _check_packed(self) -> None:
        if not isinstance(self.packed_channels, bytes) or len(self.packed_channels) % 4:
            self._invalid("packed channels must be bytes of a whole number of uint32 words")
        words = _words(self.packed_channels)
        n, i, total, previous = len(words), 0, 0, -1
        while i < n:  # one pass; the hot path (one chunk per channel) avoids slices
            if i + 3 > n:
                self._invalid(f"packed channels truncated at word {i}")
            key, count, end = (words[i] << 32) | words[i + 1], words[i + 2], i + 3 + words[i + 2]
            if key <= previous:
                self._invalid(
                    f"channel {(words[i], words[i + 1])} does not follow "
                    f"{(previous >> 32, previous & _U32_MAX)} in ascending order"
                )
            if count < 1 or end > n:
                self._invalid(f"channel {(words[i], words[i + 1])} has a bad chunk count {count}")
            if count == 1:
                length = words[i + 3]
            else:
                lengths = words[i + 3 : end]
                length = sum(lengths) if min(lengths) >= 1 else 0
            if length < 1:
                self._invalid(f"channel {(words[i], words[i + 1])} has an empty chunk")
            total += length
            previous, i = key, end
        if total != self.range_length:
            self._invalid(f"chunk lengths add up to {total}, range_length is {self.range_length}")

    def entries(self) -> Iterator[ChannelStateEntry]:
        """The chunks in file order (ascending channel; per channel in write order).

        Offsets are absolute in the file (for inline handles: in ``inline_data``). Lazy: the
        packed array is walked as the iterator advances.
        """
        words = _words(self.packed_channels)
        i, offset = 0, self.range_start
        while i < len(words):
            channel, count = (words[i], words[i + 1]), words[i + 2]
            for length in words[i + 3 : i + 3 + count]:
                yield ChannelStateEntry(channel, offset, length)
                offset += length
            i += 3 + count

    def channels(self) -> list[ChannelId]:
        """The channels with state, ascending."""
        return list(dict.fromkeys(entry.channel for entry in self.entries()))


@dataclass(frozen=True, slots=True)
class ChannelStateHandles:
    """What one subtask persisted for one checkpoint: its input and output handle (``None``
    where that side had no state)."""

    input: MergedChannelStateHandle | None = None
    output: MergedChannelStateHandle | None = None

    @property
    def persisted_bytes(self) -> int:
        """Channel-state bytes of this subtask (both sides)."""
        return sum(h.range_length for h in (self.input, self.output) if h is not None)

    def files(self) -> list[FileHandle]:
        """The distinct files the handles reference (inline handles reference none)."""
        found = {h.file.path: h.file for h in (self.input, self.output) if h and h.file}
        return list(found.values())

    @property
    def inline_bytes(self) -> int:
        """Bytes carried inline in the metadata."""
        handles = (self.input, self.output)
        return sum(h.range_length for h in handles if h is not None and h.file is None)


def build_handle(
    subtask: str,
    checkpoint_id: int,
    direction: ChannelStateDirection,
    chunks: Mapping[ChannelId, Sequence[bytes]],
    range_start: int,
    range_sha256: str,
    *,
    file: FileHandle | None = None,
    inline_data: bytes | None = None,
) -> MergedChannelStateHandle:
    """The handle of a region laid out from ``chunks`` in ascending channel order."""
    packed = pack_channels([(ch, [len(c) for c in chunks[ch]]) for ch in sorted(chunks)])
    length = sum(len(c) for per_channel in chunks.values() for c in per_channel)
    return MergedChannelStateHandle(
        subtask, checkpoint_id, direction, file, inline_data, range_start, length,
        range_sha256, packed,
    )  # fmt: skip


# -- JSON ------------------------------------------------------------------------------------


def handle_to_json(handle: MergedChannelStateHandle) -> dict[str, Any]:
    """The JSON object of ``handle`` (binary fields in base64)."""
    document: dict[str, Any] = {
        "v": JSON_VERSION,
        "subtask": handle.subtask,
        "checkpoint": handle.checkpoint_id,
        "direction": handle.direction.value,
        "start": handle.range_start,
        "length": handle.range_length,
        "sha256": handle.range_sha256,
        "channels": base64.b64encode(handle.packed_channels).decode("ascii"),
    }
    if handle.file is not None:
        document["file"] = {
            "path": handle.file.path,
            "size": handle.file.size,
            "sha256": handle.file.sha256,
        }
    else:
        document["inline"] = base64.b64encode(handle.inline_data or b"").decode("ascii")
    return document


def handle_from_json(document: object) -> MergedChannelStateHandle:
    """Parse and validate; raises :class:`ValueError` naming the field, subtask, checkpoint."""
    if not isinstance(document, dict):
        raise ValueError(f"channel-state handle must be a JSON object, got {document!r:.80}")
    where = (
        f"channel-state handle of subtask {document.get('subtask')!r}, checkpoint "
        f"{document.get('checkpoint')!r}"
    )

    def bad(problem: str) -> ValueError:
        return ValueError(f"{where}: {problem}")

    if document.get("v") != JSON_VERSION:
        raise bad(f"unknown version {document.get('v')!r} (this build reads {JSON_VERSION})")
    unknown = set(document) - _JSON_KEYS
    if unknown:
        raise bad(f"unknown fields {sorted(unknown)}")
    for key in ("subtask", "checkpoint", "direction", "start", "length", "sha256", "channels"):
        if key not in document:
            raise bad(f"missing field {key!r}")
    for key in ("checkpoint", "start", "length"):
        if isinstance(document[key], bool) or not isinstance(document[key], int):
            raise bad(f"field {key!r} must be an integer, got {document[key]!r}")
    for key in ("subtask", "direction", "sha256", "channels"):
        if not isinstance(document[key], str):
            raise bad(f"field {key!r} must be a string, got {document[key]!r:.80}")
    try:
        direction = ChannelStateDirection(document["direction"])
    except ValueError:
        raise bad(f"direction must be 'input' or 'output', got {document['direction']!r}") from None
    if ("file" in document) == ("inline" in document):
        raise bad("exactly one of 'file' and 'inline' must be present")
    file = None
    if "file" in document:
        raw = document["file"]
        if not isinstance(raw, dict) or set(raw) != {"path", "size", "sha256"}:
            raise bad(f"field 'file' must be an object with path, size, sha256, got {raw!r:.120}")
        try:
            file = FileHandle(raw["path"], raw["size"], raw["sha256"])
        except ValueError as err:
            raise bad(f"field 'file': {err}") from err
    inline = _b64(document["inline"], "inline", bad) if "inline" in document else None
    return MergedChannelStateHandle(
        subtask=document["subtask"],
        checkpoint_id=document["checkpoint"],
        direction=direction,
        file=file,
        inline_data=inline,
        range_start=document["start"],
        range_length=document["length"],
        range_sha256=document["sha256"],
        packed_channels=_b64(document["channels"], "channels", bad),
    )


def handles_to_json(handles: ChannelStateHandles) -> dict[str, Any]:
    """``{"input": handle | null, "output": handle | null}``."""
    return {
        "input": None if handles.input is None else handle_to_json(handles.input),
        "output": None if handles.output is None else handle_to_json(handles.output),
    }


def handles_from_json(document: object) -> ChannelStateHandles:
    """Inverse of :func:`handles_to_json`; checks each handle's direction."""
    if not isinstance(document, dict) or set(document) != {"input", "output"}:
        raise ValueError(
            f"subtask channel state must be an object with 'input' and 'output', "
            f"got {document!r:.120}"
        )
    sides: dict[str, MergedChannelStateHandle | None] = {}
    for side in ("input", "output"):
        raw = document[side]
        handle = None if raw is None else handle_from_json(raw)
        if handle is not None and handle.direction.value != side:
            raise ValueError(
                f"channel-state handle of subtask {handle.subtask!r}, checkpoint "
                f"{handle.checkpoint_id}: {handle.direction.value} handle stored as {side}"
            )
        sides[side] = handle
    return ChannelStateHandles(sides["input"], sides["output"])


def _b64(value: object, field: str, bad: Callable[[str], ValueError]) -> bytes:
    if not isinstance(value, str):
        raise bad(f"field {field!r} must be a base64 string, got {value!r:.80}")
    try:
        return base64.b64decode(value.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError) as err:
        raise bad(f"field {field!r} is not valid base64: {err}") from err
