"""Windowed batch streams: aggregations per key and window over record batches (issue 31).

:meth:`KeyedBatchStream.window <undertow.datastream.batch_stream.KeyedBatchStream.window>`
gives a :class:`WindowedBatchStream`: ``sum``/``min``/``max``/``count``/``mean`` per key and
window (tumbling, sliding, sessions; event time needs ``with_event_time`` first), several of
them in one operator with ``aggregate(name=(column, kind), ...)``, with ``allowed_lateness``
and ``side_output_late_data``. :class:`Aggregations` is the five
aggregations' shared face, also of the keyed stream's running aggregations. Building only: each
method checks its arguments, raising ``GraphBuildError`` naming the key columns, and adds an
operator of ``undertow.runtime.task.batch_windows`` / ``batch_sessions``. User guide:
docs/columnar.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from undertow.api.output_tag import OutputTag
from undertow.api.windows.assigners import EventTimeSessionWindows
from undertow.common.time import to_millis
from undertow.core.errors import GraphBuildError
from undertow.runtime.task.batch_aggregate import KINDS
from undertow.runtime.task.batch_sessions import BatchSessionAggregate
from undertow.runtime.task.batch_windows import END, START, BatchWindowAggregate
from undertow.runtime.task.window_aggregates import ColumnAggregate

if TYPE_CHECKING:
    from undertow.datastream.batch_stream import BatchStream, KeyedBatchStream


def check_column(what: str, column: str | None, key_columns: list[str]) -> None:
    if column is not None and not isinstance(column, str):
        raise GraphBuildError(f"{what}(): the column must be a name, got {column!r}")
    if column is not None and column in key_columns:
        raise GraphBuildError(f"{what}({column!r}): {column!r} is a key column")


class Aggregations:
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


class WindowedBatchStream(Aggregations):
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

    def aggregate(self, **named: tuple[str | None, str]) -> BatchStream:
        """Several aggregates per key and window in one operator (Flink's
        ``WindowedStream.aggregate``, by column): each keyword is an output column and its
        value ``(column, kind)``, as pandas' named aggregation, ``kind`` one of ``sum``,
        ``min``, ``max``, ``mean``, ``count`` (which counts rows; its column may be None).
        Results: key columns, ``window_start``, ``window_end``, then the named columns in
        the order given, e.g. ``aggregate(total=("v", "sum"), n=(None, "count"))``."""
        keys = self._keyed.key_columns
        if not named:
            raise GraphBuildError(f"aggregate() on the windows of key_by({keys}): name at "
                                  "least one aggregate, e.g. total=('v', 'sum')")  # fmt: skip
        aggregates = []
        for name, spec in named.items():
            if not (isinstance(spec, tuple) and len(spec) == 2 and spec[1] in KINDS):
                raise GraphBuildError(f"aggregate({name}={spec!r}) on the windows of key_by("
                                      f"{keys}): expected (column, kind), kind one of "
                                      f"{KINDS}")  # fmt: skip
            column, kind = spec
            if name in (*keys, START, END):
                raise GraphBuildError(f"aggregate({name}=...): {name!r} is a key or window "
                                      f"column of the result")  # fmt: skip
            if kind != "count" and column is None:
                raise GraphBuildError(f"aggregate({name}={spec!r}): {kind} needs a column")
            check_column(f"window aggregate {name}={kind}", column, keys)
            aggregates.append(ColumnAggregate(kind, None if kind == "count" else column, name))
        return self._windows("Aggregate", aggregates)

    def _aggregate(self, kind: str, column: str | None) -> BatchStream:
        check_column(f"window {kind}", column, self._keyed.key_columns)
        return self._windows(kind.capitalize(), [ColumnAggregate.of(kind, column)])

    def _windows(self, what: str, aggregates: list[ColumnAggregate]) -> BatchStream:
        keyed = self._keyed
        a = self._assigner
        time_column = None if self._processing_time else keyed.time_column
        if isinstance(a, EventTimeSessionWindows):
            if self._lateness or self._late_tag is not None:
                raise GraphBuildError(
                    f"session windows of key_by({keyed.key_columns}): allowed_lateness() and "
                    "side_output_late_data() are not supported on batch sessions; late rows "
                    "are dropped and counted"
                )
            sessions = BatchSessionAggregate(aggregates, keyed.key_columns, str(time_column),
                                             a._session_gap)  # fmt: skip
            return keyed._batches(f"Session Batch {what}", sessions)
        operator = BatchWindowAggregate(aggregates, keyed.key_columns, time_column,
                                        a.get_size(), a.get_slide(), a.get_offset(),
                                        self._lateness, self._late_tag)  # fmt: skip
        return keyed._batches(f"Window Batch {what}", operator)
