"""Network buffers: serialized record batches of at most one segment.

A batch of records (values and optional timestamps) is pickled in one call, which is what makes
the Python data plane fast, and cut into buffers of at most ``segment_size`` bytes. All buffers
of a batch but the last are *partial*: the receiver's :class:`BatchDeserializer` keeps them
(its "leftover", which is part of the channel's state in an unaligned checkpoint) until the
last one arrives, then unpickles the batch. A batch larger than one segment is how a record
larger than a buffer spans buffers.

A batch whose records are all ``pyarrow.RecordBatch`` (a batch stream) is written in the
Arrow IPC stream format instead (:mod:`undertow.runtime.network.arrow_payload`).

Records are pickled by :func:`undertow.core.pickling.dumps_records` (no memo: each record in
full; cloudpickle for the job script's classes); the receiver always uses ``pickle.loads``.
"""

from __future__ import annotations

import pickle
from typing import Any

import cloudpickle

from undertow.core import pickling
from undertow.core.errors import SerializationError
from undertow.runtime.network import arrow_payload


class Buffer:
    """One network buffer: bytes, and whether more buffers of the same batch follow."""

    __slots__ = ("data", "partial")

    def __init__(self, data: bytes, partial: bool = False) -> None:
        self.data = data
        self.partial = partial

    def __len__(self) -> int:
        return len(self.data)

    def __repr__(self) -> str:
        return f"Buffer({len(self.data)} bytes{', partial' if self.partial else ''})"


def serialize_batch(values: list[Any], timestamps: list[Any] | None) -> bytes:
    """Pickle a batch. Cost: one C-level pickle call without memo and one ``bytes`` search
    (cloudpickle only for batches that hold classes or functions of the job script, see
    ``core.pickling``)."""
    if arrow_payload.is_arrow_batch(values):
        return arrow_payload.encode(values, timestamps)
    payload = (values, timestamps)
    try:
        return pickling.dumps_records(payload, len(values))
    except Exception as err:
        sample = next((v for v in values if not _picklable(v)), values[0] if values else None)
        raise SerializationError(
            f"record {sample!r} of type {type(sample).__name__} cannot be serialized: {err}"
        ) from err


def _picklable(value: Any) -> bool:
    try:
        cloudpickle.dumps(value)
    except Exception:
        return False
    return True


def split_into_buffers(data: bytes, segment_size: int) -> list[Buffer]:
    """Cut a serialized batch into buffers of at most ``segment_size`` bytes."""
    if len(data) <= segment_size:
        return [Buffer(data)]
    view = memoryview(data)
    pieces = [bytes(view[i : i + segment_size]) for i in range(0, len(data), segment_size)]
    return [Buffer(p, partial=True) for p in pieces[:-1]] + [Buffer(pieces[-1])]


class BatchDeserializer:
    """Reassembles batches from buffers of one channel, in order.

    ``leftover()`` returns the bytes of the partial batch received so far (channel state).
    """

    __slots__ = ("_parts",)

    def __init__(self) -> None:
        self._parts: list[bytes] = []

    def add(self, buffer: Buffer) -> tuple[list[Any], list[Any] | None] | None:
        """Feed one buffer; returns the batch when its last buffer arrived, else ``None``."""
        if buffer.partial:
            self._parts.append(buffer.data)
            return None
        if self._parts:
            self._parts.append(buffer.data)
            data = b"".join(self._parts)
            self._parts = []
        else:
            data = buffer.data
        if data[:1] == b"\xff" and arrow_payload.is_payload(data):
            return arrow_payload.decode(data)
        values, timestamps = pickle.loads(data)
        return values, timestamps

    def leftover(self) -> bytes:
        return b"".join(self._parts)

    @property
    def has_leftover(self) -> bool:
        return bool(self._parts)


def serialize_object(obj: Any) -> bytes:
    """Pickle a control-plane object so that any process of the job can unpickle it."""
    return pickling.dumps(obj)
