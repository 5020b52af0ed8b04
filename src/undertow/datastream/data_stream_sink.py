"""What a stream's sinks return: ``DataStreamSink``, and ``execute_and_collect``'s iterator.

``DataStreamSink`` only configures transformations already recorded (name, uid, parallelism,
chaining, slot sharing); for a sink with a global committer it keeps the committer's settings
in step with the writers'. ``CloseableIterator`` takes the collected records from the client's
JobMaster on the caller's thread (each batch taken lets the sink send more:
``undertow.collect.buffer-size``); ``close`` cancels the job if it has not ended.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import Any

from undertow.common.row import Row, _create_row
from undertow.common.serialization import SimpleStringEncoder
from undertow.common.typeinfo import (
    BasicType,
    BasicTypeInfo,
    PickledBytesTypeInfo,
    PrimitiveArrayTypeInfo,
    RowTypeInfo,
    TupleTypeInfo,
)
from undertow.connectors.sink import EncodesRecords
from undertow.datastream.slot_sharing_group import SlotSharingGroup, group_name
from undertow.graph.transformations import ChainingStrategy, Transformation
from undertow.runtime.master.collect_results import END, CollectFailed
from undertow.runtime.task.print_format import java_string, shortest_float32


class DataStreamSink:
    """What sinks return: allows naming and configuring the sink operator.

    For a sink with a global committer the settings apply to the writers; the committer
    follows: its name is ``"<name>: Committer"``, its uid ``"<uid>-committer"``, it shares
    the writers' slot sharing group and keeps parallelism 1."""

    def __init__(
        self, transformation: Transformation, committer: Transformation | None = None
    ) -> None:
        self._transformation = transformation
        self._committer = committer

    @staticmethod
    def committer_name(writer_name: str) -> str:
        return f"{writer_name}: Committer"

    def name(self, name: str) -> DataStreamSink:
        self._transformation.name = name
        if self._committer is not None:
            self._committer.name = self.committer_name(name)
        return self

    def uid(self, uid: str) -> DataStreamSink:
        self._transformation.uid = uid
        if self._committer is not None:
            self._committer.uid = f"{uid}-committer"
        return self

    def set_parallelism(self, parallelism: int) -> DataStreamSink:
        self._transformation.parallelism = parallelism
        self._transformation.parallelism_set = True
        return self

    def set_description(self, description: str) -> DataStreamSink:
        return self

    def disable_chaining(self) -> DataStreamSink:
        self._transformation.chaining = ChainingStrategy.NEVER
        return self

    def slot_sharing_group(self, slot_sharing_group: SlotSharingGroup | str) -> DataStreamSink:
        name = group_name(slot_sharing_group)
        self._transformation.slot_sharing_group = name
        if self._committer is not None:
            self._committer.slot_sharing_group = name
        return self


def collected_form(type_info: Any) -> Callable[[Any], Any] | None:
    """What PyFlink's ``execute_and_collect`` makes of a record of ``type_info``, which it
    reads back from Java: a ``FLOAT`` is Java's ``Float.toString`` read as a Python float
    (``0.1``, where the functions after a ``FLOAT`` output see ``0.10000000149011612``), a
    ``PRIMITIVE_ARRAY(BYTE)`` a list of Java's signed bytes (``[1, -1]`` for ``b"\\x01\\xff"``),
    rows and tuples field by field (a row keeps its names and kind). None for every other
    type: its records come back as they are. Decided once per collect, applied per record."""
    if isinstance(type_info, BasicTypeInfo) and type_info.basic_type is BasicType.FLOAT:
        return _float_as_java_prints_it
    if isinstance(type_info, PrimitiveArrayTypeInfo) and type_info.element_type == BasicTypeInfo(
        BasicType.BYTE
    ):
        return _signed_bytes
    if not isinstance(type_info, (RowTypeInfo, TupleTypeInfo)):
        return None
    fields = [collected_form(t) for t in type_info.field_types]
    if not any(fields):
        return None

    def each_field(value: Any) -> Any:
        converted = [v if f is None or v is None else f(v) for f, v in zip(fields, value)]
        if not isinstance(value, Row):
            return tuple(converted)
        return _create_row(value._fields, converted, value.get_row_kind())

    return each_field


def _float_as_java_prints_it(value: Any) -> Any:
    return float(shortest_float32(value)) if isinstance(value, float) else value


def _signed_bytes(value: Any) -> Any:
    return [b - 256 if b > 127 else b for b in value]


class CloseableIterator:
    """Records of ``execute_and_collect``, in arrival order; ``close`` cancels the job. With
    checkpoints on, records arrive once the checkpoint after them completes (exactly once
    across restarts); with them off, at once, and a restart after some arrived raises.

    After ``close`` the iterator is exhausted, as PyFlink's is: records already fetched with
    the last batch are dropped, so a loop that closes it ends at its next step; a loop waiting
    in another thread ends too (the cancel ``close`` asked for is not raised)."""

    def __init__(self, client: Any, sink_id: str, type_info: Any = None) -> None:
        self._client = client
        self._convert = collected_form(type_info)  # as PyFlink reads the stream's type back
        self._sink_id = sink_id
        self._results = client._master.results
        self._results.register(sink_id)
        self._buffer: list[Any] = []
        self._pos = 0
        self._done = False
        #: ``close`` was called (maybe by another thread, while this one waits for records):
        #: the job's end is then the cancel it asked for, not an error to raise
        self._closed = False

    def __iter__(self) -> Iterator[Any]:
        return self

    def __next__(self) -> Any:
        while self._pos >= len(self._buffer):
            if self._done:
                raise StopIteration
            item = self._results.take(self._sink_id)
            if item is END:
                self._done = True
                if not self._closed:
                    self._client.wait()  # raises the job's failure, if any
                raise StopIteration
            if isinstance(item, CollectFailed):
                self.close()  # the job goes on restarting: nobody reads its results
                raise item.error
            self._buffer, self._pos = item, 0
        value = self._buffer[self._pos]
        self._pos += 1
        return value if self._convert is None else self._convert(value)

    def close(self) -> None:
        self._closed = True
        self._buffer, self._pos = [], 0
        if not self._done:
            self._client.cancel()
            self._done = True

    def __enter__(self) -> CloseableIterator:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def typed_sink(sink: Any, type_info: Any) -> Any:
    """``sink`` as it writes a stream declared with ``type_info``. A row-format sink whose
    encoder is ``Encoder.simple_string_encoder()`` then writes each record's Java ``toString``,
    as Flink's encoder does on PyFlink's Java side (``+I[1, a]`` for a row, ``(1,a)`` for a
    tuple, ``1.0E20`` for a double); records of a stream without a type stay ``str(record)``."""
    if (
        not isinstance(sink, EncodesRecords)
        or type(sink.encoder) is not SimpleStringEncoder
        or type_info is None
        or isinstance(type_info, PickledBytesTypeInfo)
    ):
        return sink
    java = functools.partial(java_string, type_info=type_info)
    return sink.with_encoder(sink.encoder.with_to_string(java))
