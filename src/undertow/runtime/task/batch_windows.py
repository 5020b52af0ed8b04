"""Event time of a batch stream, and its keyed event-time windows aggregated by column.

:class:`BatchEventTime` (``with_event_time(column, max_out_of_orderness)``) stamps each batch
with its largest event time and, after each batch, emits the watermark ``largest event time
seen - max_out_of_orderness - 1`` (Flink's bounded out-of-orderness, a watermark per batch).
:class:`BatchWindowAggregate` (``key_by(...).window(assigner).sum(column)``, ``min``, ...,
or several at once with ``aggregate``: :mod:`.window_aggregates`) keeps a slot per (key, window
start) in a columnar keyed table whose key groups are the key's (so its state rescales like the
record path's), adds each batch's rows to their tumbling or sliding windows with numpy, and once
a watermark reaches a window's last millisecond emits a batch per window end (key columns,
``window_start``, ``window_end``, the aggregates) stamped ``end - 1``, before it forwards the
watermark. With ``allowed_lateness`` L a fired window is kept until the watermark reaches
``end - 1 + L``; rows arriving for it meanwhile update it and fire it again at once (once per
batch); later rows are dropped and counted (``late_rows_dropped``). Nulls are errors naming the
operator. Threading: task-loop operators. Design: docs/design.md, "Batch streams".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from undertow.core.errors import BatchError
from undertow.core.types import MAX_WATERMARK, MIN_TIMESTAMP
from undertow.runtime.task.batch_aggregate import encode_keys
from undertow.runtime.task.batch_operators import _check_input as _batch
from undertow.runtime.task.batch_operators import _where
from undertow.runtime.task.operator import OneInputStreamOperator, Timestamps
from undertow.runtime.task.window_aggregates import ColumnAggregate, WindowAggregates
from undertow.runtime.task.window_slots import WindowSlotIndex
from undertow.state.columnar_table import Accumulator, ColumnarKeyedTable
from undertow.state.key_groups import key_group_range_for_subtask

START = "window_start"
END = "window_end"
#: The accumulator column holding each slot's window start (the key's last field, as a column).
_STARTS = "undertow.window_start"
#: Whether a slot's window fired (kept for allowed lateness); absent in older snapshots.
_FIRED = "undertow.fired"
_TO_MILLIS = {"s": (1000, 1), "ms": (1, 1), "us": (1, 1000), "ns": (1, 1_000_000)}


def event_millis(batch: pa.RecordBatch, column: str, where: str) -> np.ndarray:
    """The event time of every row in ms (int64): an integer column (ms) or a timestamp."""
    index = batch.schema.get_field_index(column)
    if index < 0:
        raise BatchError(f"{where}: no event-time column {column!r} in the batch (columns: "
                         f"{batch.schema.names})")  # fmt: skip
    array = batch.column(index)
    if array.null_count:
        first = pc.index(pc.is_null(array), True).as_py()
        raise BatchError(f"{where}: event-time column {column!r} has {array.null_count} "
                         f"null(s), the first at row {first}")  # fmt: skip
    kind = array.type
    if pa.types.is_timestamp(kind):
        times = array.cast(pa.int64()).to_numpy(zero_copy_only=False)
        multiply, divide = _TO_MILLIS[kind.unit]
        return times * multiply // divide if multiply * divide != 1 else times
    if pa.types.is_integer(kind):
        return array.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    raise BatchError(f"{where}: event-time column {column!r} has type {kind}; an integer "
                     "(ms since the epoch) or timestamp column is needed")  # fmt: skip


class BatchEventTime(OneInputStreamOperator):
    """Batches stamped with their largest event time, and a watermark after each batch."""

    def __init__(self, column: str, max_out_of_orderness_ms: int) -> None:
        self.column = column
        self.bound = max_out_of_orderness_ms
        self.largest = MIN_TIMESTAMP
        self.watermark = MIN_TIMESTAMP

    def process_batch(self, values: list[Any], timestamps: Timestamps) -> None:
        """Each batch, then its watermark if it rose: batches that arrive together still get
        a watermark each (downstream lateness depends on it)."""
        out: list[Any] = []
        stamps: list[Any] = []
        for value in values:
            batch = _batch(self, value)
            if batch.num_rows == 0:
                continue
            top = int(event_millis(batch, self.column, _where(self)).max())
            out.append(batch)
            stamps.append(top)
            self.largest = max(self.largest, top)
            watermark = self.largest - self.bound - 1
            if watermark > self.watermark:
                self.output.collect_batch(out, stamps)
                out, stamps = [], []
                self.watermark = watermark
                self.output.emit_watermark(watermark)
        if out:
            self.output.collect_batch(out, stamps)

    def process_watermark(self, watermark: int) -> None:
        """Upstream watermarks are replaced by this operator's, except the end of input."""
        if watermark == MAX_WATERMARK and self.watermark < MAX_WATERMARK:
            self.watermark = MAX_WATERMARK
            self.output.emit_watermark(MAX_WATERMARK)


class BatchWindowAggregate(OneInputStreamOperator):
    """``aggregates`` per key and event-time window (see the module docstring): one output
    column each, computed from one table of accumulators."""

    takes_row_ranges = True

    def __init__(self, aggregates: Sequence[ColumnAggregate], key_columns: Sequence[str],
                 time_column: str | None, size: int, slide: int, offset: int,
                 allowed_lateness: int = 0, late_tag: str | None = None) -> None:  # fmt: skip
        self.aggregates = WindowAggregates(aggregates)
        self.key_columns = list(key_columns)
        self.time_column = time_column
        self.size, self.slide, self.offset = size, slide, offset
        self.lateness = allowed_lateness
        #: The side output (tag id) of late rows (``side_output_late_data``), or None.
        self.late_tag = late_tag
        #: Processing-time windows (``time_column`` None): rows fall in the windows of the
        #: clock when their batch arrives; windows fire from a processing-time callback.
        self.processing_time = time_column is None
        self._scheduled: tuple[int, Any] | None = None
        self.table: ColumnarKeyedTable | None = None
        self.watermark = MIN_TIMESTAMP
        self.late_rows_dropped = 0
        self._restored: dict[int, bytes] = {}
        #: Vectorised (key, window start) -> slot lookups, for one key column.
        self._index: WindowSlotIndex | None = None

    # state ----------------------------------------------------------------------------------
    def snapshot_key_groups(self) -> dict[int, bytes]:
        return dict(self._restored) if self.table is None else self.table.snapshot()

    def restore_key_groups(self, blobs: dict[int, bytes]) -> None:
        mine = self._key_groups()
        self._restored = {g: b for g, b in blobs.items() if g in mine}
        if self._restored:  # restored windows may fire before any batch comes
            first = next(iter(self._restored.values()))
            schema = pa.ipc.open_stream(pa.py_buffer(first)).schema
            names = set(self.key_columns) | {START}
            dtypes = self.aggregates.dtypes_of_snapshot(schema)
            self._create([f for f in schema if f.name in names], dtypes)

    def _key_groups(self) -> range:
        ctx = self.ctx
        return key_group_range_for_subtask(ctx.max_parallelism, ctx.parallelism,
                                           ctx.subtask_index)  # fmt: skip

    def _slot_columns(self) -> list[Accumulator]:
        """The table's columns besides the aggregate's: what a slot knows of its window."""
        return [Accumulator(_STARTS, np.dtype(np.int64), 0),
                Accumulator(_FIRED, np.dtype(bool), False)]  # fmt: skip

    def _create(
        self, key_fields: list[pa.Field], dtypes: dict[str, np.dtype[Any]]
    ) -> ColumnarKeyedTable:
        columns = [*self.aggregates.accumulators(dtypes), *self._slot_columns()]
        table = ColumnarKeyedTable(key_fields, columns, self.ctx.max_parallelism,
                                   partition_key=without_window)  # fmt: skip
        try:
            table.restore(self._restored, self._key_groups(), _where(self), partial=True)
        except ValueError as err:
            raise BatchError(str(err)) from err
        self._restored = {}
        self.table = table
        if len(self.key_columns) == 1:
            self._index = WindowSlotIndex(self.ctx.max_parallelism)
        return table

    def _table_for(self, batch: pa.RecordBatch) -> ColumnarKeyedTable:
        if self.table is not None:
            return self.table
        fields = []
        for name in self.key_columns:
            index = batch.schema.get_field_index(name)
            if index < 0:
                raise BatchError(f"{_where(self)}: key column {name!r} is not in the batch "
                                 f"(columns: {batch.schema.names})")  # fmt: skip
            fields.append(batch.schema.field(index))
        fields.append(pa.field(START, pa.int64()))
        return self._create(fields, self.aggregates.value_types(batch, _where(self)))

    # processing -----------------------------------------------------------------------------
    def windows_of(self, times: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(starts, rows)``: one entry per (row, window of that row), as Flink assigns
        ``[start, start + size)`` windows every ``slide`` from ``offset``."""
        last = times - np.mod(times - self.offset, self.slide)
        count = -(-self.size // self.slide)
        if count == 1:
            return last, np.arange(len(times))
        starts = last[None, :] - self.slide * np.arange(count, dtype=np.int64)[:, None]
        valid = starts > times[None, :] - self.size
        rows = np.broadcast_to(np.arange(len(times)), starts.shape)
        return starts[valid], rows[valid]

    def open(self) -> None:
        self._schedule()  # restored processing-time windows fire when their time comes

    def finish(self) -> None:
        """BATCH mode fires the open processing-time windows at the end of input."""
        if self.processing_time and self.ctx.task_settings.batch:
            self._fire(2**63 - 1)

    def close(self) -> None:
        if self._scheduled is not None:
            self._scheduled[1].cancel()
            self._scheduled = None

    def process_batch(self, values: list[Any], timestamps: Timestamps) -> None:
        for value in values:
            batch = _batch(self, value)
            if batch.num_rows:
                self.add(batch)
        self._schedule()

    def _schedule(self) -> None:
        """Processing time: a callback at the last millisecond of the earliest open window."""
        table = self.table
        if not self.processing_time or table is None or table.num_slots == 0:
            return
        due = int(table.columns[_STARTS][: table.num_slots].min()) + self.size - 1
        if self._scheduled is not None:
            if self._scheduled[0] <= due:
                return
            self._scheduled[1].cancel()
        service = self.ctx.processing_time_service
        self._scheduled = (due, service.register_timer(due, self._on_processing_time))

    def _on_processing_time(self, time: int) -> None:
        self._scheduled = None
        self._fire(max(time, self.ctx.processing_time_service.current_processing_time()))
        self._schedule()

    def add(self, batch: pa.RecordBatch) -> None:
        """Add ``batch``'s rows to their windows' accumulators (late ones are dropped)."""
        table = self._table_for(batch)
        where = _where(self)
        if self.time_column is None:
            now = self.ctx.processing_time_service.current_processing_time()
            times = np.full(batch.num_rows, now, dtype=np.int64)
        else:
            times = event_millis(batch, self.time_column, where)
        starts, rows = self.windows_of(times)
        live = starts + self.size - 1 + self.lateness > self.watermark
        self.late_rows_dropped += int(len(live) - np.count_nonzero(live))
        if self.late_tag is not None and not live.all():
            self._side_output_late(batch, times, rows[live])
        if not live.all():
            starts, rows = starts[live], rows[live]
        if not len(rows):
            return
        values = self.aggregates.values(batch, where)
        same = len(rows) == batch.num_rows and bool((rows == np.arange(len(rows))).all())
        slots = self._slots(table, batch, starts, None if same else rows, where)
        cols = table.columns
        cols[_STARTS][slots] = starts
        self.aggregates.fold(cols, slots, values, None if same else rows)
        if self.lateness:  # windows the watermark passed: fire again with the late rows
            touched = np.zeros(table.num_slots, dtype=bool)
            touched[slots] = True
            late = touched & (cols[_STARTS][: table.num_slots] + self.size - 1 <= self.watermark)
            if late.any():
                self._emit(table, late)

    def _slots(self, table: ColumnarKeyedTable, batch: pa.RecordBatch, starts: np.ndarray,
               rows: np.ndarray | None, where: str) -> np.ndarray:  # fmt: skip
        """The slot of each (row ``rows[i]``'s key, ``starts[i]``), new slots for new pairs;
        ``rows`` None: row ``i``'s."""
        taken = None if rows is None else pa.array(rows)
        columns = [(name, batch.column(name) if taken is None else batch.column(name).take(taken))
                   for name in self.key_columns]  # fmt: skip
        if self._index is not None:
            keys = columns[0][1]
            if keys.null_count:
                encode_keys(columns, where)  # the error naming the column
            return self._index.slots(table, keys, starts)
        codes, keys = encode_keys([*columns, (START, pa.array(starts))], where)
        return table.slots_for(keys)[codes]

    def _side_output_late(self, batch: pa.RecordBatch, times: np.ndarray, kept: np.ndarray) -> None:
        """As Flink's ``sideOutputLateData``: the rows of no live window that are late
        themselves (``t + allowed lateness <= watermark``), as one batch of the input's schema
        stamped with their largest event time."""
        late = times + self.lateness <= self.watermark
        late[kept] = False
        if late.any():
            assert self.late_tag is not None
            rows = batch.filter(pa.array(late))
            self.output.collect_side(self.late_tag, rows, int(times[late].max()))

    def process_watermark(self, watermark: int) -> None:
        if watermark > self.watermark and not self.processing_time:
            self.watermark = watermark
            self._fire(watermark)
        self.output.emit_watermark(watermark)

    def _fire(self, watermark: int) -> None:
        table = self.table
        if table is None or table.num_slots == 0:
            return
        n = table.num_slots
        starts = table.columns[_STARTS][:n]
        ready = (starts + (self.size - 1) <= watermark) & ~table.columns[_FIRED][:n]
        if ready.any():
            self._emit(table, ready)
        expired = starts + (self.size - 1 + self.lateness) <= watermark
        if expired.any():
            table.remove(expired)
            if self._index is not None:
                self._index.removed(expired, n)

    def _emit(self, table: ColumnarKeyedTable, ready: np.ndarray) -> None:
        """Emit the results of the windows of the ``ready`` slots (a batch per window start)
        and mark them fired."""
        starts = table.columns[_STARTS][: table.num_slots]
        out: list[Any] = []
        stamps: list[Any] = []
        for start in np.unique(starts[ready]).tolist():
            slots = np.flatnonzero(ready & (starts == start))
            out.append(self._result(table, slots, start))
            stamps.append(start + self.size - 1)
        table.columns[_FIRED][: table.num_slots][ready] = True
        self.output.collect_batch(out, stamps)

    def _result(self, table: ColumnarKeyedTable, slots: np.ndarray, start: int) -> pa.RecordBatch:
        keys = [table.keys[i] for i in slots.tolist()]
        arrays: list[pa.Array] = [
            pa.array([k[i] for k in keys], type=field.type)
            for i, field in enumerate(table.key_fields[:-1])
        ]
        n = len(keys)
        arrays += [pa.array(np.full(n, start, np.int64)),
                   pa.array(np.full(n, start + self.size, np.int64))]  # fmt: skip
        arrays += self.aggregates.results(table.columns, slots)
        return pa.RecordBatch.from_arrays(
            arrays, names=[*self.key_columns, START, END, *self.aggregates.names]
        )


def without_window(key: tuple[Any, ...]) -> Any:
    """The stream's key of a table key ``(*key columns, window or session start)``."""
    return key[0] if len(key) == 2 else key[:-1]
