"""Arrow IPC payloads of batch streams: round trips through buffers, no pickling of rows."""

from __future__ import annotations

import pickle

import pyarrow as pa
import pytest

from undertow.runtime.network import arrow_payload
from undertow.runtime.network.buffer import BatchDeserializer, serialize_batch, split_into_buffers


def _batch(n: int, offset: int = 0) -> pa.RecordBatch:
    return pa.record_batch({"k": list(range(offset, offset + n)), "s": [str(i) for i in range(n)]})


def test_batches_travel_as_arrow_ipc_not_pickle() -> None:
    batches = [_batch(3), _batch(2, 10)]
    data = serialize_batch(batches, None)
    assert data.startswith(arrow_payload.MAGIC)
    with pytest.raises(pickle.UnpicklingError):
        pickle.loads(data)  # the payload is Arrow IPC, not a pickle
    values, stamps = BatchDeserializer().add(split_into_buffers(data, 1 << 20)[0])  # type: ignore[misc]
    assert stamps is None
    assert [b.equals(e) for b, e in zip(values, batches)] == [True, True]


def test_schemas_may_change_within_a_network_batch_and_timestamps_are_kept() -> None:
    other = pa.record_batch({"x": [1.5]})
    batches = [_batch(2), other, _batch(1)]
    values, stamps = arrow_payload.decode(arrow_payload.encode(batches, [5, None, 7]))
    assert [v.schema for v in values] == [b.schema for b in batches]
    assert all(v.equals(b) for v, b in zip(values, batches))
    assert stamps == [5, None, 7]


def test_a_batch_larger_than_a_segment_spans_buffers_and_is_reassembled() -> None:
    big = _batch(5000)
    data = serialize_batch([big], None)
    buffers = split_into_buffers(data, 1024)
    assert len(buffers) > 1 and all(b.partial for b in buffers[:-1])
    deserializer = BatchDeserializer()
    results = [deserializer.add(b) for b in buffers]
    assert results[:-1] == [None] * (len(buffers) - 1)
    last = results[-1]
    assert last is not None and last[0][0].equals(big)


def test_mixed_records_and_batches_are_pickled() -> None:
    data = serialize_batch([_batch(1), 3], None)
    assert not data.startswith(arrow_payload.MAGIC)
    assert pickle.loads(data)[0][1] == 3


def test_slices_and_dictionary_columns_round_trip_in_one_sized_payload() -> None:
    """The payload is sized before it is written: slices (row cuts, key_by's takes) and
    dictionary columns (whose dictionaries precede the batches) come back equal."""
    words = pa.array(["a", "b", "a", "c"] * 50).dictionary_encode()
    sliced = pa.record_batch({"k": list(range(200)), "w": words}).slice(37, 101)
    batches = [sliced, _batch(7).slice(2, 3), sliced.slice(5, 0)]
    values, stamps = arrow_payload.decode(arrow_payload.encode(batches, [1, 2, 3]))
    assert [v.to_pylist() for v in values] == [b.to_pylist() for b in batches]
    assert stamps == [1, 2, 3]
