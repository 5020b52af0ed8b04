"""Keyed and windowed batch streams: per-key aggregations over record batches (issue 31).

:meth:`BatchStream.key_by <undertow.datastream.batch_stream.BatchStream.key_by>` gives a
:class:`KeyedBatchStream`: the running ``sum``/``min``/``max``/``count``/``mean`` per key,
``reduce_batches(fn)``, ``process_batches(fn)`` (state and timers), and ``window(...)``, a
:class:`WindowedBatchStream` aggregating per key and window (tumbling, sliding, sessions; event
time needs ``with_event_time`` first). Building only: each method checks its arguments, raising
``GraphBuildError`` naming the key columns, and adds an operator of
``undertow.runtime.task.batch_*``. User guide: docs/columnar.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa

from undertow.api.batch_functions import KeyedBatchProcessFunction
from undertow.api.output_tag import OutputTag
from undertow.api.windows.assigners import (
    DynamicEventTimeSessionWindows,
    EventTimeSessionWindows,
    SlidingEventTimeWindows,
    SlidingProcessingTimeWindows,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
)
from undertow.api.windows.windows import to_millis
from undertow.core.errors import GraphBuildError
from undertow.datastream.batch_stream import BatchStream, batch_function
from undertow.graph.transformations import Transformation
from undertow.runtime.task.batch_aggregate import BatchAggregateOperator
from undertow.runtime.task.batch_process import BatchProcessOperator
from undertow.runtime.task.batch_reduce import BatchReduceOperator
from undertow.runtime.task.batch_sessions import BatchSessionAggregate
from undertow.runtime.task.batch_windows import BatchWindowAggregate

if TYPE_CHECKING:
    from undertow.datastream.data_stream import DataStream
    from undertow.datastream.stream_execution_environment import StreamExecutionEnvironment


def _check_column(what: str, column: str | None, key_columns: list[str]) -> None:
    if column is not None and not isinstance(column, str):
        raise GraphBuildError(f"{what}(): the column must be a name, got {column!r}")
    if column is not None and column in key_columns:
        raise GraphBuildError(f"{what}({column!r}): {column!r} is a key column")


class _Aggregations:
    """``sum``/``min``/``max``/``mean``/``count`` by column, through ``_aggregate``: running
    per key on a keyed batch stream, per key and window on a windowed one. Results are
    batches of the key columns (and the window) and one column: ``column``, or ``count``."""

    def _aggregate(self, kind: str, column: str | None) -> BatchStream:
        raise NotImplementedError

    def sum(self, column: str) -> BatchStream:
        return self._aggregate("sum", column)

    def min(self, column: str) -> BatchStream:
        return self._aggregate("min", column)

    def max(self, column: str) -> BatchStream:
        return self._aggregate("max", column)

    def mean(self, column: str) -> BatchStream:
        """Mean (float64) of ``column``."""
        return self._aggregate("mean", column)

    def count(self) -> BatchStream:
        return self._aggregate("count", None)


class KeyedBatchStream(_Aggregations, BatchStream):
    """A batch stream partitioned by key columns: keyed running aggregations."""

    def __init__(self, env: StreamExecutionEnvironment, transformation: Transformation,
                 record_stream: type[DataStream], columns: list[str],
                 time_column: str | None = None) -> None:  # fmt: skip
        super().__init__(env, transformation, record_stream, time_column)
        self.key_columns = columns

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
        _check_column(kind, column, self.key_columns)
        name = f"Keyed Batch {kind.capitalize()}"
        return self._batches(name, BatchAggregateOperator(kind, column, self.key_columns))

    def reduce_batches(self, fn: Any) -> BatchStream:
        """Running reduction per key (Flink's ``reduce``, a batch at a time): ``fn(earlier,
        later)`` combines two batches of the non-key columns row by row and must be
        associative; for every row, the row's key and its key's reduction so far, in the
        input's schema (see :mod:`undertow.runtime.task.batch_reduce`)."""
        function, call = batch_function(fn, "reduce_batches()", "reduce_batches")
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


class WindowedBatchStream(_Aggregations):
    """A keyed batch stream in windows: one aggregation per window, emitted when the watermark
    (event time) or the clock (processing time) passes the window's end (key columns,
    ``window_start``, ``window_end`` and the aggregate; see
    :mod:`undertow.runtime.task.batch_windows`)."""

    def __init__(
        self, keyed: KeyedBatchStream, assigner: Any, processing_time: bool = False
    ) -> None:
        self._keyed = keyed
        self._assigner = assigner
        self._processing_time = processing_time
        self._lateness = 0
        self._late_tag: str | None = None

    def side_output_late_data(self, output_tag: OutputTag) -> WindowedBatchStream:
        """Rows too late for any window go to ``output_tag`` (record batches of the input's
        schema; read them with ``get_side_output(output_tag)`` on the aggregation) instead
        of being only counted. Flink's ``WindowedStream.side_output_late_data``."""
        if not isinstance(output_tag, OutputTag):
            raise GraphBuildError(f"side_output_late_data(): expected an OutputTag, got "
                                  f"{output_tag!r}")  # fmt: skip
        self._late_tag = output_tag.tag_id
        return self

    def allowed_lateness(self, time_ms: Any) -> WindowedBatchStream:
        """Keep each window ``time_ms`` (int ms, or a ``Duration``/``Time``/``timedelta``)
        after the watermark passed its end; rows arriving for it meanwhile update it and fire
        it again (once per batch). Flink's ``WindowedStream.allowed_lateness``."""
        try:
            lateness = to_millis(time_ms, "allowed_lateness")
        except TypeError as err:
            raise GraphBuildError(f"allowed_lateness() on the windows of key_by("
                                  f"{self._keyed.key_columns}): {err}") from err  # fmt: skip
        if self._processing_time:
            raise GraphBuildError(
                f"allowed_lateness() on the windows of key_by({self._keyed.key_columns}): "
                "processing-time windows have no late rows; it is for event-time windows"
            )
        if lateness < 0:
            raise GraphBuildError(f"allowed_lateness() on the windows of key_by("
                                  f"{self._keyed.key_columns}): must be >= 0 ms, got "
                                  f"{lateness}")  # fmt: skip
        self._lateness = lateness
        return self

    def _aggregate(self, kind: str, column: str | None) -> BatchStream:
        keyed = self._keyed
        _check_column(f"window {kind}", column, keyed.key_columns)
        a = self._assigner
        time_column = None if self._processing_time else keyed.time_column
        if isinstance(a, EventTimeSessionWindows):
            if self._lateness or self._late_tag is not None:
                raise GraphBuildError(
                    f"session windows of key_by({keyed.key_columns}): allowed_lateness() and "
                    "side_output_late_data() are not supported on batch sessions; late rows "
                    "are dropped and counted"
                )
            sessions = BatchSessionAggregate(kind, column, keyed.key_columns,
                                             str(time_column), a._session_gap)  # fmt: skip
            return keyed._batches(f"Session Batch {kind.capitalize()}", sessions)
        operator = BatchWindowAggregate(kind, column, keyed.key_columns, time_column,
                                        a.get_size(), a.get_slide(), a.get_offset(),
                                        self._lateness, self._late_tag)  # fmt: skip
        return keyed._batches(f"Window Batch {kind.capitalize()}", operator)
