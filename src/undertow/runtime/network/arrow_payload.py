"""Arrow IPC payloads: a network batch whose records are all ``pyarrow.RecordBatch``.

A network batch of record batches is written in the Arrow IPC stream format (one stream per
run of batches that share a schema) behind a ``MAGIC`` that starts with ``0xff``, which no
pickle starts with, so the receiver tells the two encodings apart by the first byte. No row is
pickled. The payload is cut into buffers like any serialized batch; barriers stay between
record batches (never inside one).

Threading: none (pure functions). Cost: the runs' IPC streams are sized first without writing
(``MockOutputStream``), then written once into one buffer of the payload's final size, which
becomes the ``bytes`` with one more copy; one zero-copy read on the receiver. (A growing
``BufferOutputStream`` per run, then ``bytes`` of each and a join, took 2.7x the time: its
reallocations and two more copies of the columns.)

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import pickle
import struct
from typing import Any

import pyarrow as pa

from undertow.core.errors import SerializationError

MAGIC = b"\xffUA1"
_U32 = struct.Struct(">I")


def is_arrow_batch(values: list[Any]) -> bool:
    """Whether every value of a non-empty network batch is a ``pyarrow.RecordBatch``."""
    if not values:
        return False
    rb = pa.RecordBatch
    return all(type(v) is rb for v in values)


def handed_over_size(values: list[pa.RecordBatch]) -> int:
    """The bytes a network batch of record batches handed over within a worker counts for
    (credits count buffers; debloating and the switch to unaligned count bytes): the size of
    each batch's IPC message (a slice counts its rows only), without the stream's schema.
    Cost: about 2 us a batch, nothing written (``RecordBatch.nbytes`` took 57 us)."""
    return sum(pa.ipc.get_record_batch_size(batch) for batch in values)


def _write_run(sink: Any, run: list[pa.RecordBatch]) -> None:
    with pa.ipc.new_stream(sink, run[0].schema) as writer:
        for batch in run:
            writer.write_batch(batch)


def encode(values: list[pa.RecordBatch], timestamps: list[Any] | None) -> bytes:
    """The payload for ``values`` (all ``RecordBatch``) and their timestamps."""
    stamps = b"" if timestamps is None else pickle.dumps(timestamps, protocol=5)
    runs: list[list[pa.RecordBatch]] = []
    for batch in values:
        if runs and runs[-1][0].schema.equals(batch.schema, check_metadata=True):
            runs[-1].append(batch)
        else:
            runs.append([batch])
    sizes = []
    for run in runs:
        mock = pa.MockOutputStream()
        _write_run(mock, run)
        sizes.append(mock.size())
    head = b"".join((MAGIC, _U32.pack(len(stamps)), stamps, _U32.pack(len(runs))))
    payload = pa.allocate_buffer(len(head) + sum(sizes) + 4 * len(runs))
    sink = pa.FixedSizeBufferWriter(payload)
    sink.write(head)
    for run, size in zip(runs, sizes):
        sink.write(_U32.pack(size))
        _write_run(sink, run)
    if sink.tell() != payload.size:  # the sizing and the writing must agree
        raise SerializationError(
            f"Arrow IPC payload of {len(values)} record batch(es): wrote {sink.tell()} bytes "
            f"into a payload sized {payload.size}"
        )
    return payload.to_pybytes()


def decode(data: bytes) -> tuple[list[pa.RecordBatch], list[Any] | None]:
    """The record batches and timestamps of a payload written by :func:`encode`."""
    view = memoryview(data)
    pos = len(MAGIC)
    (stamps_len,) = _U32.unpack_from(view, pos)
    pos += 4
    timestamps = pickle.loads(view[pos : pos + stamps_len]) if stamps_len else None
    pos += stamps_len
    (runs,) = _U32.unpack_from(view, pos)
    pos += 4
    values: list[pa.RecordBatch] = []
    buffer = pa.py_buffer(data)
    for _ in range(runs):
        (length,) = _U32.unpack_from(view, pos)
        pos += 4
        reader = pa.ipc.open_stream(buffer.slice(pos, length))
        values.extend(reader)
        pos += length
    return values, timestamps


def is_payload(data: bytes) -> bool:
    return data[:4] == MAGIC
