"""Kafka values into Arrow record batches: the deserializers of a batch-emitting ``KafkaSource``.

A :class:`KafkaBatchDeserializationSchema` turns the values of one fetch of one partition into
one ``pyarrow.RecordBatch``, a row per value in offset order; the source emits it as one
record (``env.from_source(...).as_batches()``), stamped with its rows' largest Kafka
timestamp, and moves the partition's position past the fetch in the same call, so a
checkpoint's offsets sit exactly after the rows emitted before its barrier (:mod:`.reader`).
:class:`JsonBatchDeserializationSchema` parses a fetch's JSON objects with Arrow's JSON reader
at once; :class:`RowBatchDeserializationSchema` wraps a record ``DeserializationSchema``. A
fetch that does not deserialize whole is retried value by value (:func:`split_bad`), so a bad
value is named by its offset (or goes to the bad-record side output) and the others still
form the batch. A message the record deserializer makes ``None`` of is no row (Flink's rule
for a null, as on the record path): :meth:`~KafkaBatchDeserializationSchema.deserialize_kept`
says which messages the batch holds, so their timestamps alone stamp it. Immutable; pickled
to every reader.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.json as pa_json

from undertow.common.row import Row
from undertow.common.serialization import DeserializationSchema


class KafkaBatchDeserializationSchema(ABC):
    """Values of one fetch -> one record batch of :attr:`schema` (the module docstring)."""

    schema: pa.Schema

    @abstractmethod
    def deserialize_batch(self, messages: Sequence[bytes | None]) -> pa.RecordBatch:
        """One row per message, in order; raises if any message does not deserialize."""

    def deserialize_kept(
        self, messages: Sequence[bytes | None]
    ) -> tuple[pa.RecordBatch, list[int]]:
        """``(batch, kept)``: the batch, and the indexes of the messages its rows come from, in
        order. Every message is a row unless a subclass drops some (it then overrides this and
        makes :meth:`deserialize_batch` its batch)."""
        return self.deserialize_batch(messages), list(range(len(messages)))


class JsonBatchDeserializationSchema(KafkaBatchDeserializationSchema):
    """Each value a JSON object; the batch has the columns of ``schema`` (other fields are
    dropped, a missing field is null). Parsed by ``pyarrow.json`` a fetch at a time."""

    def __init__(self, schema: pa.Schema) -> None:
        if not isinstance(schema, pa.Schema):
            raise TypeError(f"JsonBatchDeserializationSchema: expected a pyarrow.Schema, got "
                            f"{schema!r}")  # fmt: skip
        self.schema = schema

    def deserialize_batch(self, messages: Sequence[bytes | None]) -> pa.RecordBatch:
        if not messages:
            return _empty(self.schema)
        if any(m is None for m in messages):
            raise ValueError("a null value (tombstone) is not a JSON object")
        # A JSON text has raw line breaks only as whitespace (inside strings they are escaped),
        # so each value becomes exactly one line of newline-delimited JSON.
        lines = [bytes(m).replace(b"\r", b" ").replace(b"\n", b" ") for m in messages if m]
        options = pa_json.ParseOptions(
            explicit_schema=self.schema, unexpected_field_behavior="ignore"
        )
        table = pa_json.read_json(pa.BufferReader(b"\n".join(lines)), parse_options=options)
        if table.num_rows != len(messages):
            raise ValueError(f"{len(messages)} values gave {table.num_rows} JSON rows; each value "
                             "must be one JSON object")  # fmt: skip
        table = table.select(self.schema.names).cast(self.schema)
        return table.combine_chunks().to_batches(max_chunksize=len(messages))[0]

    def __repr__(self) -> str:
        return f"JsonBatchDeserializationSchema({self.schema.names})"


class RowBatchDeserializationSchema(KafkaBatchDeserializationSchema):
    """A record ``deserializer`` per value, its records (``Row``/tuple by position, dict by
    name) collected into a batch of ``schema``; a ``None`` record is no row."""

    def __init__(self, deserializer: DeserializationSchema, schema: pa.Schema) -> None:
        if not isinstance(deserializer, DeserializationSchema):
            raise TypeError(f"RowBatchDeserializationSchema: expected a DeserializationSchema, "
                            f"got {deserializer!r}")  # fmt: skip
        if not isinstance(schema, pa.Schema):
            raise TypeError(f"RowBatchDeserializationSchema: expected a pyarrow.Schema, got "
                            f"{schema!r}")  # fmt: skip
        self.deserializer = deserializer
        self.schema = schema

    def deserialize_batch(self, messages: Sequence[bytes | None]) -> pa.RecordBatch:
        return self.deserialize_kept(messages)[0]

    def deserialize_kept(
        self, messages: Sequence[bytes | None]
    ) -> tuple[pa.RecordBatch, list[int]]:
        deserialize = self.deserializer.deserialize
        records = [deserialize(m) for m in messages]  # type: ignore[arg-type]
        kept = [i for i, record in enumerate(records) if record is not None]
        if len(kept) < len(records):
            records = [records[i] for i in kept]
        names = self.schema.names
        columns: list[list[Any]] = [[] for _ in names]
        for record in records:
            if isinstance(record, dict):
                values = [record.get(n) for n in names]
            elif isinstance(record, (Row, tuple, list)):
                values = list(record)
                if len(values) != len(names):
                    raise ValueError(f"a record of {len(values)} fields for the {len(names)} "
                                     f"columns {names}: {record!r:.80}")  # fmt: skip
            else:
                raise ValueError(f"the deserializer returned {type(record).__name__}, not a "
                                 f"Row, tuple or dict: {record!r:.80}")  # fmt: skip
            for column, value in zip(columns, values):
                column.append(value)
        arrays = [pa.array(c, type=f.type) for c, f in zip(columns, self.schema)]
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema), kept

    def __repr__(self) -> str:
        return f"RowBatchDeserializationSchema({self.deserializer!r}, {self.schema.names})"


def _empty(schema: pa.Schema) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays([pa.array([], type=f.type) for f in schema], schema=schema)


def split_bad(
    deserializer: KafkaBatchDeserializationSchema,
    messages: Sequence[bytes | None],
    bad: Callable[[int, Exception], None],
) -> tuple[pa.RecordBatch, list[int]]:
    """``(batch, kept)``: the batch of ``messages``, and the indexes of the messages its rows
    come from (:meth:`~KafkaBatchDeserializationSchema.deserialize_kept`). Tries the whole
    fetch first; if that fails, each message alone, calling ``bad(index, error)`` for each
    that fails (which may raise), and deserializes the rest together."""
    try:
        return deserializer.deserialize_kept(messages)
    except Exception:
        pass
    good: list[int] = []
    for i, message in enumerate(messages):
        try:
            deserializer.deserialize_batch([message])
        except Exception as err:
            bad(i, err)
            continue
        good.append(i)
    batch, kept = deserializer.deserialize_kept([messages[i] for i in good])
    return batch, [good[j] for j in kept]
