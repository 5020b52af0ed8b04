"""The data plane's frame bodies, encoded and decoded (pure: bytes in, a typed frame out).

Four frame types (BUFFER, CREDIT, RESUME, SIZE): a type byte, then fixed big-endian fields.
:func:`decode_frame` turns a body from an authenticated peer into one of the frozen frames
below, or raises :class:`~undertow.core.errors.NetworkError` naming the peer, the frame type
and what is wrong with it. Whether the channel exists and the values obey the credit protocol
is for the transport and the channels to check.

Threading: none (pure functions). Cost: one ``struct`` unpack per frame.

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
EVENT, PARTIAL, PRIORITY, BLOCKS = 1, 2, 4, 8
_KNOWN_FLAGS = EVENT | PARTIAL | PRIORITY | BLOCKS


@dataclass(frozen=True, slots=True)
class BufferFrame:
    """A data buffer or an event (``flags & EVENT``) for input channel ``channel``."""

    channel: int
    sequence_number: int
    backlog: int
    flags: int
    payload: bytes


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


def decode_frame(body: bytes, peer: str) -> DataFrame:
    """The frame ``body`` (one frame's bytes, without its length prefix) from ``peer``.

    Raises :class:`NetworkError` naming ``peer``, the frame type and the problem if the body
    is not one of the four frames (see the module docstring).
    """
    if not body:
        raise NetworkError(f"empty frame from {peer} (no frame type)")
    kind = body[:1]
    if kind == b"B":
        if len(body) < BUFFER_HEAD.size:
            raise NetworkError(
                f"malformed BUFFER frame from {peer}: {len(body)} bytes, shorter than its "
                f"{BUFFER_HEAD.size}-byte header"
            )
        _, channel, seq, backlog, flags = BUFFER_HEAD.unpack_from(body)
        if flags & ~_KNOWN_FLAGS:
            raise NetworkError(
                f"malformed BUFFER frame from {peer} for channel {channel}: flags "
                f"{flags:#04x} set undefined bits {flags & ~_KNOWN_FLAGS:#04x}"
            )
        return BufferFrame(channel, seq, backlog, flags, body[BUFFER_HEAD.size :])
    fixed = _FIXED.get(kind)
    if fixed is None:
        raise NetworkError(f"unknown frame type {kind!r} from {peer} ({len(body)} bytes)")
    name, layout = fixed
    if len(body) != layout.size:
        raise NetworkError(
            f"malformed {name} frame from {peer}: {len(body)} bytes, expected {layout.size}"
        )
    if kind == b"C":
        _, channel, credit = CREDIT.unpack(body)
        return CreditFrame(channel, credit)
    if kind == b"R":
        _, channel = RESUME.unpack(body)
        return ResumeFrame(channel)
    _, channel, size, max_records = SIZE.unpack(body)
    return SizeFrame(channel, size, max_records)
