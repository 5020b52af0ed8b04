"""Network buffers: serialized record batches of at most one segment.

A batch of records (values and optional timestamps) is pickled in one call, which is what makes
the Python data plane fast, and cut into buffers of at most ``segment_size`` bytes. All buffers
of a batch but the last are *partial*: the receiver's :class:`BatchDeserializer` keeps them
(its "leftover", which is part of the channel's state in an unaligned checkpoint) until the
last one arrives, then unpickles the batch. A batch larger than one segment is how a record
larger than a buffer spans buffers.

A batch whose records are all ``pyarrow.RecordBatch`` (a batch stream) is written in the
Arrow IPC stream format instead (:mod:`undertow.runtime.network.arrow_payload`).

Records are pickled by :func:`undertow.core.pickling.dumps_records` (no memo; cloudpickle for
the job script's classes), read by ``pickle.loads``; within one worker a batch (of record
batches too) is handed over unserialized, serialized only if a checkpoint captures it.
"""

from __future__ import annotations

import pickle
from typing import Any

import cloudpickle

from undertow.common.row_batches import pack_rows
from undertow.core import pickling
from undertow.core.errors import SerializationError
from undertow.runtime.network import arrow_payload


class Buffer:
    """One network buffer: bytes, and whether more buffers of the same batch follow.

    A buffer between two subtasks of one worker may instead hold its batch unserialized
    (:meth:`handed_over`): the record writer hands its list over (it never touches the list
    again) and the consumer takes it as it is, with no pickling either way. Its bytes exist only
    if something reads :attr:`data` (an unaligned checkpoint capturing it as channel state, on
    the loop thread): the batch is serialized then, once, and the consumer still takes the
    list. ``len()`` is the size the accounting uses (credits count buffers; debloating and the
    switch to unaligned count bytes): the bytes' length, or the writer's estimate for a batch
    handed over, fixed at creation so that a capture does not change what was counted.
    """

    __slots__ = ("_data", "batch", "partial", "size")

    def __init__(self, data: bytes, partial: bool = False) -> None:
        self._data: bytes | None = data
        self.partial = partial
        self.size = len(data)
        #: The batch handed over unserialized (values, timestamps), else ``None``.
        self.batch: tuple[list[Any], list[Any] | None] | None = None

    @classmethod
    def handed_over(cls, values: list[Any], timestamps: list[Any] | None, size: int) -> Buffer:
        """A whole batch for a consumer in this process; ``size``: its estimated bytes. The
        caller gives up the lists (and, as along a chain, shares the records)."""
        buffer = cls.__new__(cls)
        buffer._data = None
        buffer.partial = False
        buffer.size = size
        buffer.batch = (values, timestamps)
        return buffer

    @property
    def data(self) -> bytes:
        """The serialized batch (or this part of it); a handed-over batch is serialized on
        the first read. Cost: that serialization once, then an attribute read."""
        data = self._data
        if data is None:
            assert self.batch is not None
            data = self._data = serialize_batch(*self.batch)
        return data

    def __len__(self) -> int:
        return self.size

    def __repr__(self) -> str:
        kind = "handed over, " if self.batch is not None else ""
        return f"Buffer({kind}{self.size} bytes{', partial' if self.partial else ''})"


def serialize_batch(values: list[Any], timestamps: list[Any] | None) -> bytes:
    """Pickle a batch. Cost: one C-level pickle call without memo and one ``bytes`` search
    (cloudpickle only for batches that hold classes or functions of the job script, see
    ``core.pickling``)."""
    if arrow_payload.is_arrow_batch(values):
        return arrow_payload.encode(values, timestamps)
    payload = (pack_rows(values), timestamps)  # rows of one class: their names once
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
        batch = buffer.batch
        if batch is not None and not self._parts:
            return batch
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
