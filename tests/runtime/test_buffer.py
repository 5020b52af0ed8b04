"""Network buffers: batch serialization, splitting into segments and reassembly."""

from __future__ import annotations

import pickle
import threading
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from undertow.common import Row
from undertow.core.errors import GraphBuildError, SerializationError
from undertow.runtime.network.buffer import (
    BatchDeserializer,
    Buffer,
    serialize_batch,
    serialize_object,
    split_into_buffers,
)

Batch = tuple[list[Any], list[Any] | None]


def _round_trip(values: list[Any], stamps: list[Any] | None, segment: int) -> tuple[Batch, int]:
    buffers = split_into_buffers(serialize_batch(values, stamps), segment)
    deserializer = BatchDeserializer()
    results = [deserializer.add(b) for b in buffers]
    assert all(r is None for r in results[:-1])
    batch = results[-1]
    assert batch is not None
    assert not deserializer.has_leftover
    return batch, len(buffers)


def test_small_batch_is_one_whole_buffer() -> None:
    data = serialize_batch([1, "two", (3,)], [10, 20, 30])
    (buffer,) = split_into_buffers(data, 32 * 1024)
    assert not buffer.partial
    assert buffer.data == data
    assert len(buffer) == len(data)
    assert BatchDeserializer().add(buffer) == ([1, "two", (3,)], [10, 20, 30])


def test_batch_without_timestamps_round_trips() -> None:
    batch, count = _round_trip(["a", "b"], None, 1024)
    assert batch == (["a", "b"], None)
    assert count == 1


def test_batch_much_larger_than_a_segment_spans_buffers() -> None:
    values = [bytes([i % 251]) * 5000 for i in range(40)]  # ~200 KB
    stamps = list(range(40))
    data = serialize_batch(values, stamps)
    buffers = split_into_buffers(data, 4096)
    assert len(buffers) == -(-len(data) // 4096)
    assert all(b.partial for b in buffers[:-1]) and not buffers[-1].partial
    assert all(len(b) == 4096 for b in buffers[:-1]) and 0 < len(buffers[-1]) <= 4096
    assert b"".join(b.data for b in buffers) == data
    batch, _ = _round_trip(values, stamps, 4096)
    assert batch == (values, stamps)


def test_one_record_larger_than_a_segment() -> None:
    record = {"blob": "x" * 100_000}
    batch, count = _round_trip([record], [7], 1000)
    assert batch == ([record], [7])
    assert count > 100


def test_segment_boundaries() -> None:
    data = serialize_batch(list(range(50)), None)
    (whole,) = split_into_buffers(data, len(data))
    assert not whole.partial
    first, last = split_into_buffers(data, len(data) - 1)
    assert (first.partial, len(first), last.partial, len(last)) == (True, len(data) - 1, False, 1)


def test_leftover_holds_the_partial_batch_until_its_last_buffer() -> None:
    values = [f"{i:03}" * 100 for i in range(10)]
    data = serialize_batch(values, None)
    buffers = split_into_buffers(data, 1000)
    assert len(buffers) >= 3
    deserializer = BatchDeserializer()
    assert not deserializer.has_leftover and deserializer.leftover() == b""
    for i, buffer in enumerate(buffers[:-1]):
        assert deserializer.add(buffer) is None
        assert deserializer.has_leftover
        assert deserializer.leftover() == data[: (i + 1) * 1000]
    assert deserializer.add(buffers[-1]) == (values, None)
    assert deserializer.leftover() == b""


def test_deserializer_handles_consecutive_batches() -> None:
    deserializer = BatchDeserializer()
    first = split_into_buffers(serialize_batch(["a" * 500], None), 128)
    second = split_into_buffers(serialize_batch(["b"], [1]), 128)
    third = split_into_buffers(serialize_batch(["c" * 400], [2]), 128)
    out = [deserializer.add(b) for b in [*first, *second, *third]]
    assert [r for r in out if r is not None] == [
        (["a" * 500], None),
        (["b"], [1]),
        (["c" * 400], [2]),
    ]


@settings(max_examples=60, deadline=None)
@given(
    values=st.lists(st.one_of(st.integers(), st.text(), st.binary(max_size=300)), max_size=40),
    with_stamps=st.booleans(),
    segment=st.integers(16, 512),
)
def test_round_trip_any_batch(values: list[Any], with_stamps: bool, segment: int) -> None:
    stamps = list(range(len(values))) if with_stamps else None
    batch, _ = _round_trip(values, stamps, segment)
    assert batch == (values, stamps)


def test_class_defined_in_a_function_falls_back_to_cloudpickle() -> None:
    class Point:
        def __init__(self, x: int, y: int) -> None:
            self.x, self.y = x, y

    with pytest.raises((pickle.PicklingError, AttributeError)):
        pickle.dumps(Point(1, 2))
    batch, _ = _round_trip([Point(1, 2), Point(3, 4)], [5, 6], 64)
    values, stamps = batch
    assert [(p.x, p.y) for p in values] == [(1, 2), (3, 4)]
    assert stamps == [5, 6]


def test_lambda_inside_a_record_falls_back_to_cloudpickle() -> None:
    batch, _ = _round_trip([{"f": lambda v: v * 3}], None, 1024)
    assert batch[0][0]["f"](2) == 6


def test_unpicklable_record_raises_a_clear_serialization_error() -> None:
    lock = threading.Lock()
    with pytest.raises(SerializationError) as info:
        serialize_batch(["fine", ("holder", lock), "also fine"], None)
    message = str(info.value)
    assert "('holder', <unlocked _thread.lock" in message
    assert "of type tuple cannot be serialized" in message
    assert isinstance(info.value, GraphBuildError)
    assert info.value.__cause__ is not None


def test_unpicklable_timestamp_is_still_reported() -> None:
    with pytest.raises(SerializationError, match="cannot be serialized"):
        serialize_batch(["fine"], [threading.Lock()])


def test_buffer_repr() -> None:
    assert repr(Buffer(b"abc")) == "Buffer(3 bytes)"
    assert repr(Buffer(b"abc", partial=True)) == "Buffer(3 bytes, partial)"


def test_serialize_object_round_trips_plain_and_local_objects() -> None:
    class Marker:
        value = 42

    assert pickle.loads(serialize_object({"a": 1})) == {"a": 1}
    assert pickle.loads(serialize_object(Marker())).value == 42


def test_a_handed_over_batch_reaches_the_consumer_as_the_same_lists() -> None:
    values, stamps = [(1, 2), (3, 4)], [10, 20]
    buffer = Buffer.handed_over(values, stamps, 40)
    assert len(buffer) == 40 and not buffer.partial
    batch = BatchDeserializer().add(buffer)
    assert batch is not None
    assert batch[0] is values and batch[1] is stamps, "no pickling between the two ends"


def test_a_handed_over_batch_is_serialized_once_when_read_as_bytes() -> None:
    values = [{"k": i} for i in range(20)]
    buffer = Buffer.handed_over(values, None, 123)
    data = buffer.data  # a checkpoint captures it
    assert pickle.loads(data) == (values, None)
    assert buffer.data is data, "serialized once"
    assert len(buffer) == 123, "what the accounting counted does not change"
    batch = BatchDeserializer().add(buffer)
    assert batch is not None and batch[0] is values


def test_named_rows_of_one_class_cross_with_their_names_once() -> None:
    """A batch of named rows (a PyFlink job's usual records) is written as the names and plain
    tuples (``common.row_batches``): 67 bytes a row before, when each row pickled itself."""
    rows = [Row(user=i % 1000, amount=i % 7, ts=i // 10) for i in range(4096)]
    data = serialize_batch(rows, None)
    assert len(data) < 12 * len(rows)
    values, stamps = BatchDeserializer().add(Buffer(data)) or ([], None)
    assert values == rows and stamps is None and values[9].amount == 2
