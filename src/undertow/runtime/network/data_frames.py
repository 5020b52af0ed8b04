"""The data plane's frame bodies, encoded and decoded (pure: bytes in, a typed frame out).

Four frame types (BUFFER, CREDIT, RESUME, SIZE): a type byte, then fixed big-endian fields.
:func:`decode_frame` turns a body from an authenticated peer into one of the frozen frames
below, or raises :class:`~undertow.core.errors.NetworkError` naming the peer, the frame type
and what is wrong with it. Whether the channel exists and the values obey the credit protocol
is for the transport and the channels to check.

Threading: none (pure functions). Cost: one ``struct`` unpack per frame; no payload copied.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from undertow.core.errors import NetworkError

BUFFER_HEAD = struct.Struct(">cIIIB")
CREDIT = struct.Struct(">cII")
RESUME = struct.Struct(">cI")
SIZE = struct.Struct(">cIII")
#: The longest fixed part of a body (a BUFFER's head): what :func:`decode_frame` takes apart.
HEAD_SIZE = BUFFER_HEAD.size
EVENT, PARTIAL, PRIORITY, BLOCKS = 1, 2, 4, 8
_KNOWN_FLAGS = EVENT | PARTIAL | PRIORITY | BLOCKS


@dataclass(frozen=True, slots=True)
class BufferFrame:
    """A data buffer or an event (``flags & EVENT``) for input channel ``channel``."""

    channel: int
    sequence_number: int
    backlog: int
    flags: int
    #: The bytes after the head: ``bytes``, or the ``bytearray`` a large frame was read into.
    payload: bytes | bytearray


@dataclass(frozen=True, slots=True)
class CreditFrame:
    """AddCredit for output channel ``channel``."""

    channel: int
    credit: int


@dataclass(frozen=True, slots=True)
class ResumeFrame:
    """ResumeConsumption for output channel ``channel``."""

    channel: int


@dataclass(frozen=True, slots=True)
class SizeFrame:
    """NewBufferSize (buffer debloating) for output channel ``channel``."""

    channel: int
    buffer_size: int
    max_records: int


DataFrame = BufferFrame | CreditFrame | ResumeFrame | SizeFrame

_FIXED = {b"C": ("CREDIT", CREDIT), b"R": ("RESUME", RESUME), b"S": ("SIZE", SIZE)}


def buffer_head(channel: int, sequence_number: int, backlog: int, flags: int) -> bytes:
    """The fixed part of a BUFFER body; its payload follows."""
    return BUFFER_HEAD.pack(b"B", channel, sequence_number, backlog, flags)


def encode_credit(channel: int, credit: int) -> bytes:
    return CREDIT.pack(b"C", channel, credit)


def encode_resume(channel: int) -> bytes:
    return RESUME.pack(b"R", channel)


def encode_size(channel: int, buffer_size: int, max_records: int) -> bytes:
    return SIZE.pack(b"S", channel, buffer_size, max_records)


def decode_frame(head: bytes, payload: bytes | bytearray, peer: str) -> DataFrame:
    """The frame whose body is ``head + payload`` (without its length prefix) from ``peer``:
    ``head`` its first :data:`HEAD_SIZE` bytes (all of a shorter body), ``payload`` the rest,
    which becomes a BUFFER frame's payload as it is (no copy; the reader's ``bytearray`` for a
    large frame, see :mod:`undertow.runtime.network.frame_reader`).

    Raises :class:`NetworkError` naming ``peer``, the frame type and the problem if the body
    is not one of the four frames (see the module docstring).
    """
    if not head:
        raise NetworkError(f"empty frame from {peer} (no frame type)")
    kind = head[:1]
    if kind == b"B":
        if len(head) < BUFFER_HEAD.size:
            raise NetworkError(
                f"malformed BUFFER frame from {peer}: {len(head)} bytes, shorter than its "
                f"{BUFFER_HEAD.size}-byte header"
            )
        _, channel, seq, backlog, flags = BUFFER_HEAD.unpack(head)
        if flags & ~_KNOWN_FLAGS:
            raise NetworkError(
                f"malformed BUFFER frame from {peer} for channel {channel}: flags "
                f"{flags:#04x} set undefined bits {flags & ~_KNOWN_FLAGS:#04x}"
            )
        return BufferFrame(channel, seq, backlog, flags, payload)
    fixed = _FIXED.get(kind)
    if fixed is None:
        raise NetworkError(
            f"unknown frame type {kind!r} from {peer} ({len(head) + len(payload)} bytes)"
        )
    name, layout = fixed
    if len(head) != layout.size:  # a longer body has a 14-byte head
        raise NetworkError(
            f"malformed {name} frame from {peer}: {len(head) + len(payload)} bytes, expected "
            f"{layout.size}"
        )
    if kind == b"C":
        _, channel, credit = CREDIT.unpack(head)
        return CreditFrame(channel, credit)
    if kind == b"R":
        _, channel = RESUME.unpack(head)
        return ResumeFrame(channel)
    _, channel, size, max_records = SIZE.unpack(head)
    return SizeFrame(channel, size, max_records)
