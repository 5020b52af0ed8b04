"""Batch streams: ``pyarrow.RecordBatch`` records through the DataStream API (issue 31).

A :class:`BatchStream`'s records are record batches: it has ``map_batches``, ``map_pandas``,
``filter_batches``, ``flat_map_batches``, ``key_by`` by column(s) and ``to_records``, and
refuses the record methods naming the operator (``DataStream`` refuses the batch methods the
same way). In: ``DataStream.to_batches(schema, max_rows, max_delay)`` or ``as_batches()``; out:
``to_records()``, ``execute_and_collect()`` (record batches), ``print()`` (rows). ``key_by``
gives a :class:`KeyedBatchStream` (running aggregations, reductions and process functions per
key, and ``window(...)``: :mod:`undertow.datastream.windowed_batch_stream`).

``data_stream`` imports this module, so this one holds the ``DataStream`` class it is given
(``record_stream``) rather than importing it. User guide: docs/columnar.md; design:
docs/design.md, "Batch streams".
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from undertow.api.batch_functions import KeyedBatchProcessFunction
from undertow.api.function_shapes import (
    FilterBatchesLike,
    FlatMapBatchesLike,
    MapBatchesLike,
    MapPandasLike,
    ReduceBatchesLike,
)
from undertow.api.output_tag import OutputTag
from undertow.api.windows.assigners import (
    DynamicEventTimeSessionWindows,
    EventTimeSessionWindows,
    SlidingEventTimeWindows,
    SlidingProcessingTimeWindows,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
)
from undertow.common.time import to_millis
from undertow.core.errors import GraphBuildError
from undertow.datastream.windowed_batch_stream import (
    Aggregations,
    WindowedBatchStream,
    check_column,
)
from undertow.graph.batch_partitioner import BatchKeyGroupPartitioner
from undertow.graph.transformations import (
    PartitionTransformation,
    SideOutputTransformation,
    Transformation,
)
from undertow.runtime.task.batch_aggregate import BatchAggregateOperator
from undertow.runtime.task.batch_operators import (
    FilterBatches,
    FlatMapBatches,
    MapBatches,
    MapPandas,
    ToBatches,
    ToRecords,
)
from undertow.runtime.task.batch_process import BatchProcessOperator
from undertow.runtime.task.batch_reduce import BatchReduceOperator
from undertow.runtime.task.batch_windows import BatchEventTime

if TYPE_CHECKING:
    from undertow.datastream.data_stream import DataStream
    from undertow.datastream.data_stream_sink import DataStreamSink
    from undertow.datastream.stream_execution_environment import StreamExecutionEnvironment


@dataclass(frozen=True)
class BatchFunctionKind:
    """One kind of batch function: the Protocol its class has (looked up on the class, not
    the instance, as before) and how to take its method."""

    shape: type
    method: Callable[[Any], Any]


MAP_BATCHES = BatchFunctionKind(MapBatchesLike, lambda f: f.map_batches)
MAP_PANDAS = BatchFunctionKind(MapPandasLike, lambda f: f.map_pandas)
FILTER_BATCHES = BatchFunctionKind(FilterBatchesLike, lambda f: f.filter_batches)
FLAT_MAP_BATCHES = BatchFunctionKind(FlatMapBatchesLike, lambda f: f.flat_map_batches)
REDUCE_BATCHES = BatchFunctionKind(ReduceBatchesLike, lambda f: f.reduce_batches)


def batch_function(fn: Any, what: str, kind: BatchFunctionKind) -> tuple[Any, Any]:
    """(function object for open/close, callable): a plain callable or an object whose class
    has ``kind``'s method (e.g. ``map_batches``) or ``__call__``."""
    if issubclass(type(fn), kind.shape):
        return fn, kind.method(fn)
    if callable(fn):
        return None, fn
    raise GraphBuildError(f"{what}: expected a callable over pyarrow.RecordBatch, got {fn!r}")


def _refuse(stream: BatchStream, method: str, instead: str) -> Any:
    raise GraphBuildError(
        f"{method}() on the batch stream of operator '{stream._transformation.name}': its "
        f"records are pyarrow.RecordBatch; use {instead}"
    )


class BatchStream:
    """A stream of ``pyarrow.RecordBatch`` records (see the module docstring).

    Built by the user's program thread before ``execute``; not thread-safe."""

    def __init__(
        self, env: StreamExecutionEnvironment, transformation: Transformation,
        record_stream: type[DataStream], time_column: str | None = None,
    ) -> None:  # fmt: skip
        self._env = env
        self._transformation = transformation
        self._record_stream = record_stream
        #: The event-time column (``with_event_time``), kept through batch functions.
        self.time_column = time_column

    def _records(self) -> DataStream:
        """This stream seen as a record stream (its records are the batches)."""
        return self._record_stream(self._env, self._transformation)

    def _batches(self, name: str, operator: Any) -> BatchStream:
        t = self._records()._one_input(name, operator)._transformation
        return BatchStream(self._env, t, self._record_stream, self.time_column)

    # properties of the last operator, as on DataStream ----------------------------------------
    def get_name(self) -> str:
        return self._transformation.name

    def get_execution_environment(self) -> StreamExecutionEnvironment:
        return self._env

    def name(self, name: str) -> BatchStream:
        self._records().name(name)
        return self

    def uid(self, uid: str) -> BatchStream:
        self._records().uid(uid)
        return self

    def set_parallelism(self, parallelism: int) -> BatchStream:
        self._records().set_parallelism(parallelism)
        return self

    def set_max_parallelism(self, max_parallelism: int) -> BatchStream:
        self._records().set_max_parallelism(max_parallelism)
        return self

    def disable_chaining(self) -> BatchStream:
        self._records().disable_chaining()
        return self

    def start_new_chain(self) -> BatchStream:
        self._records().start_new_chain()
        return self

    def rebalance(self) -> BatchStream:
        """Record batches round robin over the next operator's subtasks (whole batches)."""
        return BatchStream(self._env, self._records().rebalance()._transformation,
                           self._record_stream, self.time_column)  # fmt: skip

    # transformations --------------------------------------------------------------------------
    def map_batches(self, fn: Any, schema: pa.Schema | None = None) -> BatchStream:
        """``fn(batch) -> RecordBatch`` (or ``Table``); with ``schema``, every result is
        checked against it."""
        if schema is not None and not isinstance(schema, pa.Schema):
            raise GraphBuildError(
                f"map_batches() after operator '{self.get_name()}': schema must be a "
                f"pyarrow.Schema, got {schema!r}"
            )
        function, call = batch_function(fn, "map_batches()", MAP_BATCHES)
        return self._batches("Map Batches", MapBatches(function, call, schema))

    def map_pandas(self, fn: Any, schema: pa.Schema | None = None) -> BatchStream:
        """``fn(pandas.DataFrame) -> pandas.DataFrame`` per record batch (Spark's
        ``mapInPandas``, a batch at a time); with ``schema`` the result's columns are taken by
        name and converted to it, otherwise their types are inferred. Needs pandas
        (``pip install 'undertow[pandas]'``)."""
        if importlib.util.find_spec("pandas") is None:
            raise GraphBuildError(f"map_pandas() after operator '{self.get_name()}' needs "
                                  "pandas: pip install 'undertow[pandas]'")  # fmt: skip
        if schema is not None and not isinstance(schema, pa.Schema):
            raise GraphBuildError(
                f"map_pandas() after operator '{self.get_name()}': schema must be a "
                f"pyarrow.Schema, got {schema!r}"
            )
        function, call = batch_function(fn, "map_pandas()", MAP_PANDAS)
        return self._batches("Map Pandas", MapPandas(function, call, schema))

    def filter_batches(self, fn: Any) -> BatchStream:
        """``fn(batch) -> boolean mask`` with one entry per row; true rows are kept."""
        function, call = batch_function(fn, "filter_batches()", FILTER_BATCHES)
        return self._batches("Filter Batches", FilterBatches(function, call))

    def flat_map_batches(self, fn: Any) -> BatchStream:
        """``fn(batch) -> iterable of RecordBatch`` (or ``None``)."""
        function, call = batch_function(fn, "flat_map_batches()", FLAT_MAP_BATCHES)
        return self._batches("FlatMap Batches", FlatMapBatches(function, call))

    def with_event_time(self, column: str, max_out_of_orderness: Any = 0) -> BatchStream:
        """Event time from ``column`` (integer ms since the epoch, or a timestamp): each batch
        is stamped with its largest event time, and a watermark follows each batch at the
        largest event time seen minus ``max_out_of_orderness`` (a ``Duration``, ``Time``,
        ``timedelta`` or int ms) minus 1 ms, as Flink's bounded out-of-orderness."""
        if not isinstance(column, str):
            raise GraphBuildError(f"with_event_time() after operator '{self.get_name()}': "
                                  f"the column must be a name, got {column!r}")  # fmt: skip
        try:
            bound = to_millis(max_out_of_orderness, "max_out_of_orderness")
        except TypeError as err:
            raise GraphBuildError(f"with_event_time() after operator '{self.get_name()}': "
                                  f"{err}") from err  # fmt: skip
        if bound < 0:
            raise GraphBuildError(f"with_event_time() after operator '{self.get_name()}': "
                                  f"max_out_of_orderness must be >= 0 ms, got {bound}")  # fmt: skip
        stream = self._batches("Event Time", BatchEventTime(column, bound))
        stream.time_column = column
        return stream

    def get_side_output(self, output_tag: OutputTag) -> BatchStream:
        """The record batches this operator emitted to ``output_tag`` (the late rows of
        ``side_output_late_data``)."""
        if not isinstance(output_tag, OutputTag):
            raise GraphBuildError(f"get_side_output(): expected an OutputTag, got {output_tag!r}")
        t = SideOutputTransformation(name=f"SideOutput({output_tag.tag_id})",
                                     input=self._transformation, tag_id=output_tag.tag_id,
                                     output_type=output_tag.type_info)  # fmt: skip
        return BatchStream(self._env, t, self._record_stream, self.time_column)

    def to_records(self) -> DataStream:
        """Every row as a ``Row`` with the batch's column names."""
        return self._records()._one_input("To Records", ToRecords())

    def key_by(self, key_selector: Any, key_type: Any = None) -> KeyedBatchStream:
        """Partition by the column ``key_selector`` (a name) or columns (a list of names);
        rows go to the subtask of their key group, as records of the same key would. The key
        columns' Arrow types are the key's type: a ``key_type`` is refused, not ignored."""
        if key_type is not None:
            raise GraphBuildError(
                f"key_by() on the batch stream of operator '{self.get_name()}': the key "
                f"columns' Arrow types are the key's type, so key_type={key_type!r} is not "
                "taken; leave it out (or cast the columns with map_batches)"
            )
        columns = [key_selector] if isinstance(key_selector, str) else key_selector
        if not (
            isinstance(columns, (list, tuple)) and columns
            and all(isinstance(c, str) for c in columns)
        ):  # fmt: skip
            raise GraphBuildError(
                f"key_by() on the batch stream of operator '{self.get_name()}': key by a "
                f"column name or a list of column names, got {key_selector!r}"
            )
        keying = BatchKeying.of(self._transformation, columns, self._env.get_max_parallelism())
        return KeyedBatchStream(self._env, keying, self._record_stream, self.time_column)

    # sinks --------------------------------------------------------------------------------------
    def execute_and_collect(
        self, job_execution_name: str | None = None, limit: int | None = None
    ) -> Any:
        """Run the job and iterate its record batches here (``limit`` counts batches)."""
        return self._records().execute_and_collect(job_execution_name, limit)

    def print(self, sink_identifier: str | None = None) -> DataStreamSink:
        """One line per row, as ``to_records().print()``."""
        return self.to_records().print(sink_identifier)

    def add_sink(self, sink_func: Any) -> DataStreamSink:
        """A sink function called with each record batch."""
        return self._records().add_sink(sink_func)

    def sink_to(self, sink: Any) -> DataStreamSink:
        """A Sink V2 whose writer gets each record batch as one element."""
        return self._records().sink_to(sink)

    # record methods are refused: their functions would receive batches
    def map(self, func: Any, output_type: Any = None) -> DataStream:
        return _refuse(self, "map", "map_batches(), or to_records() first")

    def flat_map(self, func: Any, output_type: Any = None) -> DataStream:
        return _refuse(self, "flat_map", "flat_map_batches(), or to_records() first")

    def filter(self, func: Any) -> DataStream:
        return _refuse(self, "filter", "filter_batches(), or to_records() first")

    def process(self, func: Any, output_type: Any = None) -> DataStream:
        return _refuse(self, "process", "map_batches(), or to_records() first")

    def to_batches(self, schema: Any = None, max_rows: int = 0, max_delay: int = 0) -> Any:
        return _refuse(self, "to_batches", "it as it is: it is a batch stream already")


@dataclass(frozen=True, slots=True)
class BatchKeying:
    """The exchange of a keyed batch stream: the virtual ``edge`` every operator on the stream
    reads through, and its ``partitioner``, typed as the batch key-group partitioner it is.

    Invariant: ``edge.partitioner is partitioner``; both constructors keep it. Built by the
    user's program thread; the edge's name and uid may be set on it later (``name()``)."""

    edge: PartitionTransformation
    partitioner: BatchKeyGroupPartitioner

    @staticmethod
    def of(upstream: Transformation, columns: Sequence[str], max_parallelism: int) -> BatchKeying:
        """``upstream``'s record batches split by the key group of ``columns``."""
        partitioner = BatchKeyGroupPartitioner(columns, max_parallelism, upstream.name)
        edge = PartitionTransformation(name="Hash", input=upstream, partitioner=partitioner)
        return BatchKeying(edge, partitioner)

    @property
    def key_columns(self) -> list[str]:
        return self.partitioner.columns

    def reading(self, columns: Sequence[str]) -> BatchKeying:
        """A copy of the exchange (its name and input) that sends only the key columns and
        ``columns``, for a consumer that reads no other (``pruned_to``). A uid hashes operators
        and their inputs' uids, not this virtual edge, so the copy changes no uid."""
        pruned = self.partitioner.pruned_to(columns)
        edge = PartitionTransformation(name=self.edge.name, input=self.edge.input,
                                       partitioner=pruned)  # fmt: skip
        return BatchKeying(edge, pruned)


class KeyedBatchStream(Aggregations, BatchStream):
    """A batch stream partitioned by key columns (its :class:`BatchKeying`): keyed running
    aggregations, reductions, process functions and windows."""

    def __init__(
        self, env: StreamExecutionEnvironment, keying: BatchKeying,
        record_stream: type[DataStream], time_column: str | None = None,
    ) -> None:  # fmt: skip
        super().__init__(env, keying.edge, record_stream, time_column)
        self._keying = keying

    @property
    def key_columns(self) -> list[str]:
        return self._keying.key_columns

    def window(self, assigner: Any) -> WindowedBatchStream:
        """Windows per key: ``TumblingEventTimeWindows``, ``SlidingEventTimeWindows`` or
        ``EventTimeSessionWindows.with_gap`` over the column of ``with_event_time``, or
        ``TumblingProcessingTimeWindows`` / ``SlidingProcessingTimeWindows`` over the clock
        when a batch arrives; aggregate them with ``sum``/``min``/``max``/``count``/``mean``."""
        if isinstance(assigner, (TumblingProcessingTimeWindows, SlidingProcessingTimeWindows)):
            return WindowedBatchStream(self, assigner, processing_time=True)
        sessions = isinstance(assigner, EventTimeSessionWindows) and not isinstance(
            assigner, DynamicEventTimeSessionWindows
        )
        if not sessions and not isinstance(
            assigner, (TumblingEventTimeWindows, SlidingEventTimeWindows)
        ):
            raise GraphBuildError(
                f"window({assigner!r}) on a keyed batch stream (key_by({self.key_columns})): "
                "batch streams have tumbling and sliding windows in event or processing time "
                "(TumblingEventTimeWindows, SlidingEventTimeWindows, "
                "TumblingProcessingTimeWindows, SlidingProcessingTimeWindows) and event-time "
                "sessions with a fixed gap (EventTimeSessionWindows.with_gap)"
            )
        if self.time_column is None:
            raise GraphBuildError(
                f"window() on a keyed batch stream (key_by({self.key_columns})) needs event "
                "time: call with_event_time(column) on the batch stream before key_by()"
            )
        return WindowedBatchStream(self, assigner)

    def _aggregate(self, kind: str, column: str | None) -> BatchStream:
        """Running ``kind`` per key: for every row, its key's aggregate after that row."""
        check_column(kind, column, self.key_columns)
        name = f"Keyed Batch {kind.capitalize()}"
        # the exchange carries only the columns the aggregation reads: the key columns and
        # ``column``
        reading = self._keying.reading([] if column is None else [column])
        keyed = KeyedBatchStream(self._env, reading, self._record_stream, self.time_column)
        return keyed._batches(name, BatchAggregateOperator(kind, column, self.key_columns))

    def reduce_batches(self, fn: Any) -> BatchStream:
        """Running reduction per key (Flink's ``reduce``, a batch at a time): ``fn(earlier,
        later)`` combines two batches of the non-key columns row by row and must be
        associative; for every row, the row's key and its key's reduction so far, in the
        input's schema (see :mod:`undertow.runtime.task.batch_reduce`)."""
        function, call = batch_function(fn, "reduce_batches()", REDUCE_BATCHES)
        return self._batches("Keyed Batch Reduce",
                             BatchReduceOperator(function, call, self.key_columns))  # fmt: skip

    def process_batches(self, fn: KeyedBatchProcessFunction) -> BatchStream:
        """A keyed batch process function: ``fn.process_batch(batch, ctx)`` per record batch
        and ``fn.on_timer(timestamp, ctx)`` per timer timestamp, with value, list and map
        states and timers vectorised over the batch's distinct keys (see
        :mod:`undertow.api.batch_functions`)."""
        if not isinstance(fn, KeyedBatchProcessFunction):
            raise GraphBuildError(
                f"process_batches() on a keyed batch stream (key_by({self.key_columns})): "
                f"expected a KeyedBatchProcessFunction, got {fn!r:.80}"
            )
        return self._batches("Keyed Batch Process", BatchProcessOperator(fn, self.key_columns))

    def _keyed_refusal(self, method: str) -> Any:
        raise GraphBuildError(
            f"{method}() on a keyed batch stream (key_by({self.key_columns})) is not supported "
            "yet; aggregate with sum/min/max/count/mean, or call it before key_by()"
        )

    def map_batches(self, fn: Any, schema: pa.Schema | None = None) -> BatchStream:
        return self._keyed_refusal("map_batches")

    def filter_batches(self, fn: Any) -> BatchStream:
        return self._keyed_refusal("filter_batches")

    def map_pandas(self, fn: Any, schema: pa.Schema | None = None) -> BatchStream:
        return self._keyed_refusal("map_pandas")

    def flat_map_batches(self, fn: Any) -> BatchStream:
        return self._keyed_refusal("flat_map_batches")

    def set_parallelism(self, parallelism: int) -> BatchStream:
        raise GraphBuildError("set_parallelism() is not allowed on a keyed batch stream; set it "
                              "on the aggregation after key_by(...)")  # fmt: skip


def to_batches(stream: DataStream, schema: pa.Schema, max_rows: int, max_delay: int,
               record_stream: type[DataStream]) -> BatchStream:  # fmt: skip
    """``DataStream.to_batches``: see :class:`~undertow.runtime.task.batch_operators.ToBatches`."""
    if not isinstance(schema, pa.Schema):
        raise GraphBuildError(
            f"to_batches() after operator '{stream.get_name()}': schema must be a "
            f"pyarrow.Schema, got {schema!r}"
        )
    if max_rows < 1 or max_delay < 0:
        raise GraphBuildError(
            f"to_batches() after operator '{stream.get_name()}': max_rows must be >= 1 and "
            f"max_delay >= 0 ms, got {max_rows} and {max_delay}"
        )
    op = ToBatches(schema, max_rows, max_delay)
    t = stream._one_input("To Batches", op)._transformation
    return BatchStream(stream.get_execution_environment(), t, record_stream)


def as_batches(stream: DataStream, record_stream: type[DataStream]) -> BatchStream:
    """``DataStream.as_batches``: the same stream, declared to carry record batches."""
    return BatchStream(stream.get_execution_environment(), stream._transformation, record_stream)
