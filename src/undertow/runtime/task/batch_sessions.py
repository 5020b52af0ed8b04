"""Event-time session windows of a keyed batch stream, aggregated by column.

``key_by(...).window(EventTimeSessionWindows.with_gap(gap)).sum(column)`` (``min``, ``max``,
``count``, ``mean``): each row opens ``[t, t + gap)`` for its key, and a key's windows that
intersect (touching counts, as Flink's ``TimeWindow.intersects``) merge into a session.
:class:`BatchSessionAggregate` keeps a slot per (key, session start) in the columnar table of
:mod:`.batch_windows` (the key's key groups: snapshots and rescaling as theirs), with the
session's end as a column. A batch merges with numpy; a late row (its own window ended at the
watermark) is kept only if it joins a session open at its point of the batch, as Flink checks
record by record. Once the watermark reaches a session's last millisecond it is emitted, in
one batch per watermark (key columns, ``window_start``, ``window_end``, the aggregate) stamped
with its largest ``window_end - 1``. No allowed lateness or late-data side output.

Threading: a task-loop operator. Design: docs/design.md, "Batch streams".
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from undertow.runtime.task.batch_aggregate import encode_keys, segmented_scan
from undertow.runtime.task.batch_operators import _where
from undertow.runtime.task.batch_windows import (
    _STARTS,
    START,
    BatchWindowAggregate,
    event_millis,
    without_window,
)
from undertow.runtime.task.window_aggregates import ColumnAggregate
from undertow.state.columnar_table import Accumulator, ColumnarKeyedTable

#: The accumulator column holding each session's end (exclusive).
_ENDS = "undertow.window_end"


class BatchSessionAggregate(BatchWindowAggregate):
    """``aggregates`` per key and event-time session (see the module docstring)."""

    def __init__(self, aggregates: list[ColumnAggregate], key_columns: list[str],
                 time_column: str, gap: int) -> None:  # fmt: skip
        if gap <= 0:
            raise ValueError(f"a session gap must be > 0 ms, got {gap}")
        super().__init__(aggregates, key_columns, time_column, gap, gap, 0)
        self.gap = gap

    def _slot_columns(self) -> list[Accumulator]:
        return [Accumulator(_STARTS, np.dtype(np.int64), 0),
                Accumulator(_ENDS, np.dtype(np.int64), 0)]  # fmt: skip

    def add(self, batch: pa.RecordBatch) -> None:
        """Merge ``batch``'s rows into their keys' sessions (late rows: module docstring)."""
        table = self._table_for(batch)
        where = _where(self)
        times = event_millis(batch, self.time_column or "", where)
        columns = [(name, batch.column(name)) for name in self.key_columns]
        codes, keys = encode_keys(columns, where)
        values = self.aggregates.values(batch, where)
        late = np.flatnonzero(times + (self.gap - 1) <= self.watermark).tolist()
        begin = 0
        for row in [*late, len(times)]:
            if begin < row:
                self._merge(table, keys, codes[begin:row], times[begin:row],
                            {c: v[begin:row] for c, v in values.items()}, False)  # fmt: skip
            if row < len(times):
                one = slice(row, row + 1)
                kept = self._merge(table, keys, codes[one], times[one],
                                   {c: v[one] for c, v in values.items()}, True)  # fmt: skip
                self.late_rows_dropped += 0 if kept else 1
            begin = row + 1

    def _merge(
        self, table: ColumnarKeyedTable, keys: list[Any], codes: np.ndarray, times: np.ndarray,
        values: dict[str, np.ndarray], only_joining: bool,
    ) -> bool:  # fmt: skip
        """Merge rows (their key codes into ``keys``, times, values) with their keys' open
        sessions; with ``only_joining`` (a late row) only if they join an open session.
        Returns whether the rows were taken."""
        n = table.num_slots
        code_of = {key: code for code, key in enumerate(keys)}
        slot_codes = np.fromiter((code_of.get(without_window(k), -1) for k in table.keys),
                                 dtype=np.int64, count=n)  # fmt: skip
        old = np.flatnonzero(slot_codes >= 0)
        cols = table.columns
        all_codes = np.concatenate([slot_codes[old], codes])
        starts = np.concatenate([cols[_STARTS][old], times])
        ends = np.concatenate([cols[_ENDS][old], times + self.gap])
        order = np.lexsort((starts, all_codes))
        all_codes, starts, ends = all_codes[order], starts[order], ends[order]
        reach = segmented_scan(np.maximum, ends, all_codes)
        begins = np.ones(len(order), dtype=bool)
        begins[1:] = (all_codes[1:] != all_codes[:-1]) | (starts[1:] > reach[:-1])
        group = np.cumsum(begins) - 1
        is_new = order >= len(old)
        touched = np.zeros(group[-1] + 1, dtype=bool)
        touched[group[is_new]] = True
        if only_joining:
            has_old = np.zeros(len(touched), dtype=bool)
            has_old[group[~is_new]] = True
            if not (touched & has_old).any():
                return False
        # The touched sessions: their first start, last end, and folded accumulators.
        live = touched[group]
        g_live = group[live]
        firsts = np.flatnonzero(begins & live)
        index = np.full(len(touched), -1, dtype=np.int64)
        index[group[firsts]] = np.arange(len(firsts))
        at = index[g_live]
        new_starts = starts[firsts]
        new_ends = np.full(len(firsts), np.iinfo(np.int64).min, dtype=np.int64)
        np.maximum.at(new_ends, at, ends[live])
        merged_old = old[order[live & ~is_new]]
        old_at = index[group[live & ~is_new]]
        rows_at = index[group[live & is_new]]
        rows = order[live & is_new] - len(old)
        folded = self.aggregates.fresh(table.accumulators, len(firsts))
        self.aggregates.merge(folded, old_at, cols, merged_old)
        self.aggregates.fold(folded, rows_at, values, rows)
        drop = np.zeros(n, dtype=bool)
        drop[merged_old] = True
        table.remove(drop)
        first_codes = all_codes[firsts].tolist()
        new_keys = [_with_start(keys[c], s) for c, s in zip(first_codes, new_starts.tolist())]
        slots = table.slots_for(new_keys)
        cols = table.columns  # the table may have grown
        cols[_STARTS][slots] = new_starts
        cols[_ENDS][slots] = new_ends
        for name, out in folded.items():
            cols[name][slots] = out
        return True

    def _fire(self, watermark: int) -> None:
        table = self.table
        if table is None or table.num_slots == 0:
            return
        n = table.num_slots
        ends = table.columns[_ENDS][:n]
        ready = ends - 1 <= watermark
        if not ready.any():
            return
        slots = np.flatnonzero(ready)
        result = self._result(table, slots, 0)
        stamp = int(ends[slots].max()) - 1
        table.remove(ready)
        self.output.collect_batch([result], [stamp])

    def _result(self, table: ColumnarKeyedTable, slots: np.ndarray, start: int) -> pa.RecordBatch:
        keys = [table.keys[i] for i in slots.tolist()]
        arrays: list[pa.Array] = [
            pa.array([k[i] for k in keys], type=field.type)
            for i, field in enumerate(table.key_fields[:-1])
        ]
        cols = table.columns
        arrays += [pa.array(cols[_STARTS][slots]), pa.array(cols[_ENDS][slots])]
        arrays += self.aggregates.results(cols, slots)
        return pa.RecordBatch.from_arrays(
            arrays, names=[*self.key_columns, START, "window_end", *self.aggregates.names]
        )


def _with_start(key: Any, start: int) -> tuple[Any, ...]:
    return (*key, start) if isinstance(key, tuple) else (key, start)
