"""Kafka values into record batches: the JSON and row deserializers, and a bad value among
good ones, found by its offset (the reader's error), or sent to the side output while the
good ones still form the batch."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pytest

from undertow.common.row import Row
from undertow.common.serialization import DeserializationSchema
from undertow.connectors.kafka.admin import KafkaSourceError
from undertow.connectors.kafka.batch_deserializer import (
    JsonBatchDeserializationSchema,
    RowBatchDeserializationSchema,
    split_bad,
)
from undertow.connectors.kafka.fetcher import FetchedRecords
from undertow.connectors.kafka.offsets import KafkaTopicPartition
from undertow.connectors.kafka.reader import KafkaBadRecord, KafkaSourceReader, ReaderSettings
from undertow.connectors.kafka.split import KafkaPartitionSplit

SCHEMA = pa.schema([("k", pa.int64()), ("name", pa.string())])
JSON = JsonBatchDeserializationSchema(SCHEMA)


def test_json_values_become_one_batch_of_the_schema() -> None:
    values = [b'{"k": 1, "name": "a", "other": true}', b'{\n  "name": "b\\nc"\n}', b'{"k": 3}']
    batch = JSON.deserialize_batch(values)
    assert batch.schema == SCHEMA
    assert batch.to_pylist() == [
        {"k": 1, "name": "a"}, {"k": None, "name": "b\nc"}, {"k": 3, "name": None},
    ]  # fmt: skip
    assert JSON.deserialize_batch([]).num_rows == 0


@pytest.mark.parametrize("bad", [b"{not json", b"", None, b'{"k": "x"}', b"[1, 2]"])
def test_a_bad_value_is_found_alone_and_the_good_ones_still_form_the_batch(bad: Any) -> None:
    values = [b'{"k": 1}', bad, b'{"k": 2}']
    with pytest.raises(Exception):  # noqa: B017 - whatever Arrow raises for it
        JSON.deserialize_batch(values)
    found: list[int] = []
    batch, kept = split_bad(JSON, values, lambda i, err: found.append(i))
    assert (found, kept, batch.column("k").to_pylist()) == ([1], [0, 2], [1, 2])


class Parts(DeserializationSchema):
    def deserialize(self, message: bytes) -> Any:
        k, name = message.decode().split(",")
        if k == "dict":
            return {"name": name, "k": 0}
        return Row(int(k), name)


def test_a_record_deserializer_fills_a_batch_by_position_or_by_name() -> None:
    rows = RowBatchDeserializationSchema(Parts(), SCHEMA)
    batch = rows.deserialize_batch([b"1,a", b"dict,b"])
    assert batch.to_pylist() == [{"k": 1, "name": "a"}, {"k": 0, "name": "b"}]
    with pytest.raises(ValueError, match=r"a record of 3 fields for the 2 columns"):
        RowBatchDeserializationSchema(_Constant((1, 2, 3)), SCHEMA).deserialize_batch([b""])
    with pytest.raises(ValueError, match="returned str, not a Row, tuple or dict"):
        RowBatchDeserializationSchema(_Constant("x"), SCHEMA).deserialize_batch([b""])
    with pytest.raises(TypeError, match=r"expected a pyarrow\.Schema"):
        JsonBatchDeserializationSchema("k int")  # type: ignore[arg-type]


class _Constant(DeserializationSchema):
    def __init__(self, value: Any) -> None:
        self.value = value

    def deserialize(self, message: bytes) -> Any:
        return self.value


class _Output:
    def __init__(self) -> None:
        self.batches: list[Any] = []
        self.stamps: list[Any] = []
        self.side: list[Any] = []

    def collect_batch(self, values: list[Any], timestamps: Any) -> None:
        self.batches += values
        self.stamps += timestamps

    def collect_side(self, tag_id: str, value: Any, timestamp: Any = None) -> None:
        self.side.append((tag_id, value))


def _reader(tag: str | None) -> KafkaSourceReader:
    settings = ReaderSettings({}, JSON, -1, False, tag, "t at test")
    reader = KafkaSourceReader(None, settings)  # type: ignore[arg-type]
    tp = KafkaTopicPartition("t", 0)
    reader.positions[tp] = KafkaPartitionSplit(tp, 11)
    return reader


FETCH = FetchedRecords(
    KafkaTopicPartition("t", 0), [10, 11, 12, 13],
    [b'{"k": 0}', b'{"k": 1}', b"oops", json.dumps({"k": 3}).encode()], [5, 7, 9, 8],
)  # fmt: skip


def test_the_reader_emits_a_fetch_as_one_batch_and_names_a_bad_value_by_its_offset() -> None:
    reader, out = _reader(None), _Output()
    with pytest.raises(KafkaSourceError, match=r"topic 't', partition 0, offset 12: .*b'oops'"):
        reader._emit(FETCH, out, None)  # type: ignore[arg-type]
    reader, out = _reader("bad"), _Output()
    reader._emit(FETCH, out, None)  # type: ignore[arg-type]
    [batch] = out.batches
    assert batch.column("k").to_pylist() == [1, 3]  # offset 10 was emitted before the restore
    assert out.stamps == [8]  # the largest timestamp of its rows
    [(tag, bad)] = out.side
    assert tag == "bad" and isinstance(bad, KafkaBadRecord) and (bad.offset, bad.value) == (
        12, b"oops")  # fmt: skip
    tp = KafkaTopicPartition("t", 0)
    assert reader.positions[tp].starting_offset == 14  # past the fetch, with its batch


class _SkipsBlank(DeserializationSchema):
    """Like ``JsonRowDeserializationSchema.ignore_parse_errors()``: ``None`` for a blank
    value, an error for one it cannot split."""

    def deserialize(self, message: bytes) -> Any:
        return None if message == b"-" else Parts().deserialize(message)


def test_a_none_record_is_no_row_and_the_kept_indexes_say_which_messages_are() -> None:
    rows = RowBatchDeserializationSchema(_SkipsBlank(), SCHEMA)
    batch, kept = rows.deserialize_kept([b"-", b"1,a", b"-", b"2,b"])
    assert (batch.to_pylist(), kept) == ([{"k": 1, "name": "a"}, {"k": 2, "name": "b"}], [1, 3])
    assert rows.deserialize_batch([b"-"]).num_rows == 0
    found: list[int] = []
    batch, kept = split_bad(
        rows, [b"-", b"1,a", b"bad", b"-", b"2,b"], lambda i, e: found.append(i)
    )
    assert (found, kept, batch.column("k").to_pylist()) == ([2], [1, 4], [1, 2])


def test_the_reader_stamps_a_batch_with_the_timestamps_of_its_rows_only() -> None:
    """A message made ``None`` is dropped with its timestamp, as the record path drops it."""
    settings = ReaderSettings({}, RowBatchDeserializationSchema(_SkipsBlank(), SCHEMA), -1,
                              False, None, "t at test")  # fmt: skip
    reader, out = KafkaSourceReader(None, settings), _Output()  # type: ignore[arg-type]
    tp = KafkaTopicPartition("t", 0)
    reader.positions[tp] = KafkaPartitionSplit(tp, 0)
    fetch = FetchedRecords(tp, [0, 1, 2], [b"1,a", b"-", b"2,b"], [5, 99, 8])
    reader._emit(fetch, out, None)  # type: ignore[arg-type]
    [batch] = out.batches
    assert (batch.column("k").to_pylist(), out.stamps) == ([1, 2], [8])
    reader._emit(FetchedRecords(tp, [3], [b"-"], [100]), out, None)  # type: ignore[arg-type]
    assert (len(out.batches), reader.positions[tp].starting_offset) == (1, 4)
