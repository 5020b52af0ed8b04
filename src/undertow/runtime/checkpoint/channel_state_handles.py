"""Merged channel-state handles: one per (subtask, file, direction), offsets packed.

A :class:`MergedChannelStateHandle` names the file once (FLINK-33734: one handle per channel
puts P² paths in ``_metadata``). Packed channels, ``uint32`` little-endian, ascending::

    a, b, n, len_1, ..., len_n     channel (a, b); n >= 1 chunks of len_i >= 1 bytes

A handle may *refer* to runs of an older checkpoint's file (:class:`ChannelStateReference`,
spliced after ``position`` written chunks; FLIP-76); then it may write nothing.

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
from dataclasses import dataclass, replace
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
     "channels", "refs"}
)  # fmt: skip
_EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


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
class ChannelStateReference:
    """A run of consecutive chunks of ``channel`` in an older checkpoint's channel-state file:
    ``lengths`` chunks starting at byte ``start`` of ``file``, inside the region
    ``[region_start, +region_length)`` whose sha256 is ``region_sha256`` (the reader verifies
    that region before it uses the run). ``position``: how many of the channel's written
    chunks come before the run in stream order (0 when it stands for itself, as a restored
    stream's run does). Paths are relative to the job directory, like every ``FileHandle``.

    Invariants, checked on construction (:class:`ValueError` naming file and channel): at
    least one chunk, every length >= 1, the run inside the region, the region inside the file.
    """

    channel: ChannelId
    position: int
    file: FileHandle
    region_start: int
    region_length: int
    region_sha256: str
    start: int
    lengths: tuple[int, ...]

    def __post_init__(self) -> None:
        where = f"channel-state reference of channel {self.channel!r} to {self.file.path}"
        ints = (self.position, self.region_start, self.region_length, self.start, *self.lengths)
        if any(isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in ints):
            raise ValueError(f"{where}: offsets and lengths must be non-negative ints")
        if not self.lengths or min(self.lengths) < 1:
            raise ValueError(f"{where}: a run holds chunks of >= 1 byte, got {self.lengths!r}")
        end, region_end = self.start + self.length, self.region_start + self.region_length
        if self.start < self.region_start or end > region_end or region_end > self.file.size:
            raise ValueError(
                f"{where}: run [{self.start}, {end}) is not inside region "
                f"[{self.region_start}, {region_end}) of a {self.file.size}-byte file"
            )
        if not isinstance(self.region_sha256, str) or not _SHA256_HEX.match(self.region_sha256):
            raise ValueError(f"{where}: region_sha256 must be 64 lowercase hex digits")

    @property
    def length(self) -> int:
        """Bytes of the run."""
        return sum(self.lengths)

    def tail(self, skip: int) -> ChannelStateReference | None:
        """The run without its first ``skip`` chunks (``None`` if nothing is left)."""
        if skip >= len(self.lengths):
            return None
        return replace(
            self, start=self.start + sum(self.lengths[:skip]), lengths=self.lengths[skip:]
        )

    def head(self, chunks: int) -> ChannelStateReference:
        """The run's first ``chunks`` chunks (at least one)."""
        return replace(self, lengths=self.lengths[:chunks])

    def at(self, position: int) -> ChannelStateReference:
        """The run spliced after ``position`` written chunks of its channel."""
        return replace(self, position=position)


def _direction_name(direction: object) -> object:
    """What an error calls a handle's direction: its value, or what was given instead."""
    return direction.value if isinstance(direction, ChannelStateDirection) else direction


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
    #: Runs of older files this handle refers to (ascending channel, then position).
    references: tuple[ChannelStateReference, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.direction, ChannelStateDirection):
            self._invalid(f"direction must be a ChannelStateDirection, got {self.direction!r}")
        counts = (
            ("checkpoint_id", self.checkpoint_id),
            ("range_start", self.range_start),
            ("range_length", self.range_length),
        )
        for name, value in counts:
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                self._invalid(f"{name} must be a non-negative int, got {value!r}")
        if self.range_length == 0 and not self.references:
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
        order = [(r.channel, r.position) for r in self.references]
        if order != sorted(order):
            self._invalid("references must be in ascending channel and position order")

    @property
    def referenced_bytes(self) -> int:
        """Bytes of older files this handle refers to (not written by its checkpoint)."""
        return sum(r.length for r in self.references)

    @property
    def location(self) -> str:
        """What errors call the region: the file path, or ``inline``."""
        return "inline" if self.file is None else self.file.path

    def _invalid(self, problem: str) -> None:
        raise ValueError(
            f"channel-state handle of subtask {self.subtask!r}, checkpoint "
            f"{self.checkpoint_id!r}, {_direction_name(self.direction)}: "
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
        """The channels with state (written or referenced), ascending."""
        found = {entry.channel for entry in self.entries()}
        return sorted(found | {r.channel for r in self.references})


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
        """The distinct files the handles' regions are in (inline handles have none)."""
        found = {h.file.path: h.file for h in (self.input, self.output) if h and h.file}
        return list(found.values())

    def referenced_files(self) -> list[FileHandle]:
        """The distinct older files the handles refer to (:class:`ChannelStateReference`)."""
        handles = [h for h in (self.input, self.output) if h is not None]
        found = {r.file.path: r.file for h in handles for r in h.references}
        return list(found.values())

    @property
    def referenced_bytes(self) -> int:
        """Bytes of older files the handles refer to."""
        return sum(h.referenced_bytes for h in (self.input, self.output) if h is not None)

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
    references: Sequence[ChannelStateReference] = (),
) -> MergedChannelStateHandle:
    """The handle of a region laid out from ``chunks`` in ascending channel order, referring
    to ``references`` (any order; sorted here)."""
    packed = pack_channels(
        [(ch, [len(c) for c in chunks[ch]]) for ch in sorted(chunks) if chunks[ch]]
    )
    length = sum(len(c) for per_channel in chunks.values() for c in per_channel)
    if length == 0:  # everything is referenced: nothing of the region is written
        file, inline_data, range_start, range_sha256 = None, b"", 0, _EMPTY_SHA256
    refs = tuple(sorted(references, key=lambda r: (r.channel, r.position)))
    return MergedChannelStateHandle(
        subtask, checkpoint_id, direction, file, inline_data, range_start, length,
        range_sha256, packed, refs,
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
    if handle.references:  # absent otherwise: such handles encode as before
        document["refs"] = [reference_to_json(r) for r in handle.references]
    return document


def reference_to_json(ref: ChannelStateReference) -> dict[str, Any]:
    """The JSON object of one reference."""
    return {
        "channel": list(ref.channel), "position": ref.position,
        "file": {"path": ref.file.path, "size": ref.file.size, "sha256": ref.file.sha256},
        "region": [ref.region_start, ref.region_length, ref.region_sha256],
        "start": ref.start, "lengths": list(ref.lengths),
    }  # fmt: skip


def reference_from_json(document: object, where: str) -> ChannelStateReference:
    """Parse one reference; :class:`ValueError` naming ``where`` and the field."""
    keys = {"channel", "position", "file", "region", "start", "lengths"}
    if not isinstance(document, dict) or set(document) != keys:
        raise ValueError(f"{where}: a reference must be an object with {sorted(keys)}")
    try:
        raw, region = document["file"], document["region"]
        file = FileHandle(raw["path"], raw["size"], raw["sha256"])
        a, b = document["channel"]
        return ChannelStateReference(
            (a, b), document["position"], file, region[0], region[1], region[2],
            document["start"], tuple(document["lengths"]),
        )  # fmt: skip
    except (KeyError, TypeError, ValueError) as err:
        raise ValueError(f"{where}: bad reference: {err}") from err


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
        references=tuple(reference_from_json(r, where) for r in _refs(document, bad)),
    )


def _refs(document: dict[str, Any], bad: Callable[[str], ValueError]) -> list[Any]:
    refs = document.get("refs", [])
    if not isinstance(refs, list):
        raise bad(f"field 'refs' must be a list, got {refs!r:.80}")
    return refs


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
