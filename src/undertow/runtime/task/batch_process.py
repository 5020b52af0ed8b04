"""The operator of ``key_by(columns).process_batches(fn)``: a keyed batch process function.

Per record batch it finds the distinct keys (dictionary encoding) and calls the function with
a context whose states and timers are vectorised over them; output carries the batch's
timestamp. A rising watermark fires the event-time timers at or below it, one ``on_timer``
call per timestamp (earliest first, the output stamped with it) before the watermark goes on;
processing-time timers fire the same way from a processing-time callback. Timers set during a
firing at or below the time fired wait for the next advance (PyFlink's rule); at the end of
input the MAX watermark fires every event-time timer; processing-time timers only in BATCH mode.
State: value, list and map states in a :class:`~undertow.state.columnar_table.ColumnarKeyedTable`
(columns and flags of :mod:`.batch_process_state`), timers in two
:class:`~undertow.state.columnar_timers.ColumnarTimers`; a snapshot packs the three tables'
blobs per key group, so it rescales. Threading: a task-loop operator (``setup ->
restore_key_groups? -> open -> process_batch* / process_watermark* / timers -> close``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from undertow.api.batch_functions import (
    BatchListStateDescriptor,
    BatchMapStateDescriptor,
    BatchValueStateDescriptor,
    KeyedBatchProcessFunction,
)
from undertow.api.functions import TimeDomain
from undertow.core.errors import BatchError
from undertow.core.types import MIN_TIMESTAMP
from undertow.runtime.task.batch_aggregate import encode_keys
from undertow.runtime.task.batch_operators import _check_input, _where
from undertow.runtime.task.batch_process_state import (
    LIST,
    MAP,
    BatchListStateView,
    BatchMapStateView,
    BatchValueStateView,
    column_for,
    declare,
)
from undertow.runtime.task.batch_reduce import state_column
from undertow.runtime.task.operator import OneInputStreamOperator, Timestamps
from undertow.runtime.task.udf_hooks import ForwardsCheckpointHooks, UdfHooks
from undertow.state.columnar_table import Accumulator, ColumnarKeyedTable
from undertow.state.columnar_timers import ColumnarTimers, pack_parts, unpack_parts
from undertow.state.key_groups import key_group_range_for_subtask

_SET = "undertow.set."
_END_OF_TIME = 2**63 - 1
_PARTS = ("state", "event", "processing")


class _Context(KeyedBatchProcessFunction.OnTimerContext):
    """The context of one call (see ``KeyedBatchProcessFunction.Context``)."""

    def __init__(self, op: BatchProcessOperator, keys: pa.RecordBatch, key_values: list[Any],
                 index: np.ndarray | None, timestamp: int | None, domain: TimeDomain | None,
                 ) -> None:  # fmt: skip
        self._op, self._keys, self._values, self._index = op, keys, key_values, index
        self._timestamp, self._domain = timestamp, domain
        self._slots = op.states_table().slots_for(key_values)

    def keys(self) -> pa.RecordBatch:
        return self._keys

    def key_index(self) -> np.ndarray:
        if self._index is None:
            raise BatchError(f"{_where(self._op)}: key_index() is for process_batch(); in "
                             "on_timer() every row of ctx.keys() is a fired key")  # fmt: skip
        return self._index

    def timestamp(self) -> int | None:
        return self._timestamp

    def time_domain(self) -> TimeDomain:
        if self._domain is None:
            raise BatchError(f"{_where(self._op)}: time_domain() is for on_timer()")
        return self._domain

    def current_watermark(self) -> int:
        return self._op.watermark

    def current_processing_time(self) -> int:
        return self._op.ctx.processing_time_service.current_processing_time()

    def get_state(self, descriptor: BatchValueStateDescriptor) -> BatchValueStateView:
        self._op.declare(descriptor)
        return BatchValueStateView(self._op.states_table, descriptor, self._slots, _where(self._op))

    def get_list_state(self, descriptor: BatchListStateDescriptor) -> BatchListStateView:
        op = self._op
        op.declare_column(descriptor.name, LIST, pa.list_(descriptor.element_type))
        return BatchListStateView(op.states_table, descriptor, self._slots, _where(op))

    def get_map_state(self, descriptor: BatchMapStateDescriptor) -> BatchMapStateView:
        op, d = self._op, descriptor
        op.declare_column(d.name, MAP, pa.map_(d.key_type, d.value_type))
        return BatchMapStateView(op.states_table, descriptor, self._slots, _where(op))

    def _timers(self, times: Any, key_index: Any, what: str) -> tuple[list[Any], Any, Any]:
        """``(keys, times, valid)`` of a timer call, one entry per distinct (key, time): the
        arguments give one time per key of :meth:`keys`, or per entry of ``key_index`` (each
        entry's key as a row of :meth:`keys`); duplicates are dropped here, in numpy, so the
        timer table sees each (key, time) once."""
        keys = self._values
        if key_index is None:
            index = np.arange(len(keys), dtype=np.int64)
        else:
            index = np.asarray(key_index, dtype=np.int64)
            if index.ndim != 1 or (len(index) and (index.min() < 0 or index.max() >= len(keys))):
                raise BatchError(
                    f"{_where(self._op)}: {what}(): key_index must be rows of ctx.keys() "
                    f"(0..{len(keys) - 1}), got {key_index!r:.80}"
                )
        n = len(index)
        if isinstance(times, (int, np.integer)):
            stamps, valid = np.full(n, int(times), dtype=np.int64), np.ones(n, dtype=bool)
        else:
            try:
                array = times if isinstance(times, pa.Array) else pa.array(times, type=pa.int64())
                array = array.cast(pa.int64())
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError) as err:
                raise BatchError(f"{_where(self._op)}: {what}() takes an int or one int per "
                                 f"key, got {times!r:.80}") from err  # fmt: skip
            if len(array) != n:
                raise BatchError(
                    f"{_where(self._op)}: {what}() got {len(array)} times for {n} keys; one per "
                    "key of ctx.keys() or of key_index (or one int) is needed"
                )
            valid = array.is_valid().to_numpy(zero_copy_only=False)
            stamps = pc.fill_null(array, 0).to_numpy(zero_copy_only=False)
        index, stamps = index[valid], stamps[valid]
        order = np.lexsort((stamps, index))
        index, stamps = index[order], stamps[order]
        first = np.ones(len(index), dtype=bool)
        first[1:] = (index[1:] != index[:-1]) | (stamps[1:] != stamps[:-1])
        distinct = [keys[i] for i in index[first].tolist()]
        return distinct, stamps[first], np.ones(len(distinct), dtype=bool)

    def register_event_time_timers(self, times: Any, key_index: Any = None) -> None:
        what = "register_event_time_timers"
        self._op.timers("event").register(*self._timers(times, key_index, what))

    def register_processing_time_timers(self, times: Any, key_index: Any = None) -> None:
        what = "register_processing_time_timers"
        self._op.timers("processing").register(*self._timers(times, key_index, what))
        self._op.schedule()

    def delete_event_time_timers(self, times: Any, key_index: Any = None) -> None:
        what = "delete_event_time_timers"
        self._op.timers("event").delete(*self._timers(times, key_index, what))

    def delete_processing_time_timers(self, times: Any, key_index: Any = None) -> None:
        what = "delete_processing_time_timers"
        self._op.timers("processing").delete(*self._timers(times, key_index, what))


class BatchProcessOperator(ForwardsCheckpointHooks, OneInputStreamOperator):
    """Runs a :class:`KeyedBatchProcessFunction` keyed by ``key_columns`` (module docstring)."""

    takes_row_ranges = True

    def __init__(self, function: Any, key_columns: Sequence[str]) -> None:
        self.function = function
        self.hooks = UdfHooks.of(function)
        self.key_columns = list(key_columns)
        self.watermark = MIN_TIMESTAMP
        self.key_fields: list[pa.Field] | None = None
        self._tables: dict[str, Any] = {}
        self._restored: dict[str, dict[int, bytes]] = {}
        self._scheduled: tuple[int, Any] | None = None
        #: State-table slots after the last drop of empty keys (see ``_bound_keys``).
        self._kept = 0

    def open(self) -> None:
        self.hooks.open(self.ctx.runtime_context)
        self.schedule()

    def finish(self) -> None:
        """BATCH mode fires the processing-time timers at the end of input (as Flink's)."""
        if self.ctx.task_settings.batch:
            self._fire("processing", _END_OF_TIME)

    def close(self) -> None:
        if self._scheduled is not None:
            self._scheduled[1].cancel()
            self._scheduled = None
        self.hooks.close()

    # state ----------------------------------------------------------------------------------
    def _key_groups(self) -> range:
        ctx = self.ctx
        return key_group_range_for_subtask(ctx.max_parallelism, ctx.parallelism,
                                           ctx.subtask_index)  # fmt: skip

    def snapshot_key_groups(self) -> dict[int, bytes]:
        if self.key_fields is None:
            return {}
        self._drop_empty_keys()
        blobs = {part: self._tables[part].snapshot() if part == "state"
                 else self._tables[part].table.snapshot() for part in _PARTS}  # fmt: skip
        groups = set().union(*blobs.values())
        return {g: pack_parts({p: blobs[p][g] for p in _PARTS if g in blobs[p]})
                for g in sorted(groups)}  # fmt: skip

    def _drop_empty_keys(self) -> None:
        """Forget the keys without any state value (their slots were made for a call)."""
        table = self.states_table()
        n = table.num_slots
        held = np.zeros(n, dtype=bool)
        for name, column in table.columns.items():
            if name.startswith(_SET):
                held |= column[:n]
        table.remove(~held)
        self._kept = table.num_slots

    def _bound_keys(self) -> None:
        """Between calls: drop the empty keys once the table doubled since the last time, so
        that keys whose state was cleared do not pile up without checkpoints (amortised
        O(1) per key)."""
        if self.states_table().num_slots > max(1024, 2 * self._kept):
            self._drop_empty_keys()

    def restore_key_groups(self, blobs: dict[int, bytes]) -> None:
        mine = self._key_groups()
        where = _where(self)
        parts: dict[str, dict[int, bytes]] = {p: {} for p in _PARTS}
        try:
            for group, blob in blobs.items():
                if group in mine:
                    for name, part in unpack_parts(blob, where).items():
                        parts.setdefault(name, {})[group] = part
        except ValueError as err:
            raise BatchError(str(err)) from err
        if not any(parts.values()):
            return
        schemas = [pa.ipc.open_stream(pa.py_buffer(b)).schema for p in parts.values()
                   for b in p.values()]  # fmt: skip
        first = schemas[0]
        self._create([first.field(name) for name in self.key_columns])
        states = self.states_table()
        for schema in (pa.ipc.open_stream(pa.py_buffer(b)).schema for b in parts["state"].values()):
            for f in schema:
                if f.name not in self.key_columns and f.name not in states.accumulators:
                    states.add_accumulator(_flag(f.name[len(_SET):]) if f.name.startswith(_SET)
                                           else column_for(f) or state_column(f))  # fmt: skip
        try:
            states.restore(parts["state"], mine, where, partial=True)
            for domain in ("event", "processing"):
                self.timers(domain).table.restore(parts[domain], mine, where)
        except ValueError as err:
            raise BatchError(str(err)) from err

    def _create(self, key_fields: list[pa.Field]) -> None:
        self.key_fields = key_fields
        max_p = self.ctx.max_parallelism
        self._tables = {"state": ColumnarKeyedTable(key_fields, [], max_p),
                        "event": ColumnarTimers(key_fields, max_p),
                        "processing": ColumnarTimers(key_fields, max_p)}  # fmt: skip

    def states_table(self) -> ColumnarKeyedTable:
        table: ColumnarKeyedTable = self._tables["state"]
        return table

    def timers(self, domain: str) -> ColumnarTimers:
        timers: ColumnarTimers = self._tables[domain]
        return timers

    def _name_taken(self, name: str, column: str) -> None:
        """A state name belongs to one kind of state (value, list, map)."""
        taken = {name, LIST + name, MAP + name} - {column}
        clash = taken & self.states_table().accumulators.keys()
        if clash:
            raise BatchError(f"{_where(self)}: state name {name!r} is used by another kind of "
                             "state (value, list and map states need distinct names)")  # fmt: skip

    def declare_column(self, name: str, prefix: str, arrow_type: pa.DataType) -> None:
        """A list (``prefix`` LIST) or map (MAP) state's columns at its first use."""
        self._name_taken(name, prefix + name)
        declare(self.states_table(), prefix + name, arrow_type, _where(self))

    def declare(self, descriptor: BatchValueStateDescriptor) -> None:
        """Add ``descriptor``'s columns at its first use; a restored state must keep its type."""
        self._name_taken(descriptor.name, descriptor.name)
        table = self.states_table()
        existing = table.accumulators.get(descriptor.name)
        if existing is None:
            table.add_accumulator(state_column(pa.field(descriptor.name, descriptor.type)))
            if _SET + descriptor.name not in table.accumulators:
                table.add_accumulator(_flag(descriptor.name))
        elif existing.snapshot_type != descriptor.type:
            raise BatchError(f"{_where(self)}: state {descriptor.name!r} is declared "
                             f"{descriptor.type} but holds {existing.snapshot_type} (restored or "
                             "declared before)")  # fmt: skip

    # calls ----------------------------------------------------------------------------------
    def _emit(self, result: Any, timestamp: int | None, out: list[Any], stamps: list[Any]) -> None:
        if result is None:
            return
        items = [result] if isinstance(result, (pa.RecordBatch, pa.Table)) else result
        for item in items:
            if isinstance(item, pa.Table):
                batches = item.to_batches()
            elif isinstance(item, pa.RecordBatch):
                batches = [item]
            else:
                raise BatchError(f"{_where(self)}: a keyed batch process function must return "
                                 f"record batches (or Tables), got {type(item).__name__} "
                                 f"{item!r:.80}")  # fmt: skip
            for batch in batches:
                if batch.num_rows:
                    out.append(batch)
                    stamps.append(timestamp)

    def process_batch(self, values: list[Any], timestamps: Timestamps) -> None:
        out: list[Any] = []
        stamps: list[Any] = []
        for i, value in enumerate(values):
            batch = _check_input(self, value)
            if not batch.num_rows:
                continue
            missing = [c for c in self.key_columns if batch.schema.get_field_index(c) < 0]
            if missing:
                raise BatchError(f"{_where(self)}: key column(s) {missing} not in the batch "
                                 f"(columns: {batch.schema.names})")  # fmt: skip
            if self.key_fields is None:
                self._create([batch.schema.field(c) for c in self.key_columns])
            codes, keys = encode_keys([(c, batch.column(c)) for c in self.key_columns],
                                      _where(self))  # fmt: skip
            _, first = np.unique(codes, return_index=True)
            key_batch = batch.select(self.key_columns).take(pa.array(first))
            stamp = None if timestamps is None else timestamps[i]
            ctx = _Context(self, key_batch, keys, codes, stamp, None)
            self._emit(self.function.process_batch(batch, ctx), stamp, out, stamps)
            self._bound_keys()
        if out:
            self.output.collect_batch(out, stamps)

    def _fire(self, domain: str, time: int) -> None:
        """Call ``on_timer`` for each timestamp of the ``domain`` timers due at ``time``."""
        if self.key_fields is None:
            return
        out: list[Any] = []
        stamps: list[Any] = []
        kind = TimeDomain.EVENT_TIME if domain == "event" else TimeDomain.PROCESSING_TIME
        for timestamp, keys in self.timers(domain).pop_due(time):
            ctx = _Context(self, self._key_batch(keys), keys, None, timestamp, kind)
            stamp = timestamp if domain == "event" else None
            self._emit(self.function.on_timer(timestamp, ctx), stamp, out, stamps)
            self._bound_keys()
        if out:
            self.output.collect_batch(out, stamps)

    def _key_batch(self, keys: list[Any]) -> pa.RecordBatch:
        fields = self.key_fields
        assert fields is not None
        if len(fields) == 1:
            arrays = [pa.array(keys, type=fields[0].type)]
        else:
            arrays = [pa.array([k[i] for k in keys], type=f.type) for i, f in enumerate(fields)]
        return pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields))

    def process_watermark(self, watermark: int) -> None:
        if watermark > self.watermark:
            self.watermark = watermark
            self._fire("event", watermark)
        self.output.emit_watermark(watermark)

    # processing time ------------------------------------------------------------------------
    def schedule(self) -> None:
        """Make the processing-time service call back at the earliest processing-time timer."""
        earliest = self.timers("processing").earliest() if self.key_fields else None
        if earliest is None:
            return
        if self._scheduled is not None:
            if self._scheduled[0] <= earliest:
                return
            self._scheduled[1].cancel()
        service = self.ctx.processing_time_service
        self._scheduled = (earliest, service.register_timer(earliest, self._on_processing_time))

    def _on_processing_time(self, time: int) -> None:
        self._scheduled = None
        now = max(time, self.ctx.processing_time_service.current_processing_time())
        self._fire("processing", now)
        self.schedule()


def _flag(name: str) -> Accumulator:
    return Accumulator(_SET + name, np.dtype(bool), False, pa.bool_())
