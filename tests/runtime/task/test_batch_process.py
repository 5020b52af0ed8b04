"""The keyed batch process function: its outputs equal a record-by-record model of Flink's
KeyedProcessFunction (value state, an event-time timer per record, timers firing in timestamp
order after each watermark), also when the state and timers are snapshotted midway and
restored rescaled 1 -> 2; processing-time timers fire, restore and can be deleted."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.runtime.task.batch_harness import Batched, keyed_batch_harness

from undertow.api.batch_functions import BatchValueStateDescriptor, KeyedBatchProcessFunction
from undertow.api.functions import TimeDomain
from undertow.common import Configuration
from undertow.core.errors import BatchError
from undertow.core.types import MAX_WATERMARK
from undertow.runtime.task.batch_process import BatchProcessOperator
from undertow.state.key_groups import assign_to_key_group, key_group_range_for_subtask
from undertow.testing.harness import OneInputOperatorTestHarness

TOTAL = BatchValueStateDescriptor("total", pa.int64())
LAG, DELAY = 7, 10


class FlushAfter(KeyedBatchProcessFunction):
    """Sums ``v`` per key; each row sets a timer ``DELAY`` ms after its ``t``; a timer emits
    the key's sum (null if none) and clears it."""

    def process_batch(self, batch: pa.RecordBatch, ctx: Any) -> None:
        state = ctx.get_state(TOTAL)
        n = ctx.keys().num_rows
        v = batch.column("v").to_numpy()
        sums = np.bincount(ctx.key_index(), weights=v, minlength=n).astype(np.int64)
        state.update(pc.add(pc.fill_null(state.value(), 0), pa.array(sums)))
        t = batch.column("t").to_numpy()
        ctx.register_event_time_timers(t + DELAY, key_index=ctx.key_index())

    def on_timer(self, timestamp: int, ctx: Any) -> pa.RecordBatch:
        state = ctx.get_state(TOTAL)
        keys = ctx.keys()
        at = pa.array([timestamp] * keys.num_rows, type=pa.int64())
        out = keys.append_column("at", at).append_column("total", state.value())
        state.clear()
        return out


def _op(fn: KeyedBatchProcessFunction, *, subtask: int = 0, parallelism: int = 1,
        blobs: dict[int, bytes] | None = None,
        ) -> Batched[BatchProcessOperator]:  # fmt: skip
    return keyed_batch_harness(BatchProcessOperator(fn, ["k"]), "Keyed Batch Process",
                               subtask=subtask, parallelism=parallelism, blobs=blobs)  # fmt: skip


def _batch(rows: list[tuple[int, int, int]]) -> pa.RecordBatch:
    columns = list(zip(*rows)) if rows else [[], [], []]
    return pa.record_batch({name: pa.array(list(c), pa.int64())
                            for name, c in zip("ktv", columns)})  # fmt: skip


def _model(batches: list[list[tuple[int, int, int]]]) -> list[tuple[int, int, Any]]:
    """Record by record, with the watermark ``max t - LAG`` after each batch that raises it
    (a watermark that does not advance fires nothing, as Flink's watermark valve forwards only
    rising watermarks: a timer set at or below the watermark waits for the next rise)."""
    total: dict[int, int] = {}
    timers: set[tuple[int, int]] = set()
    out: list[tuple[int, int, Any]] = []
    top = last = -(2**62)

    def fire(watermark: int) -> None:
        nonlocal last
        if watermark <= last:
            return
        last = watermark
        for at, k in sorted(t for t in timers if t[0] <= watermark):
            timers.discard((at, k))
            out.append((k, at, total.pop(k, None)))

    for rows in batches:
        for k, t, v in rows:
            total[k] = total.get(k, 0) + v
            timers.add((t + DELAY, k))
            top = max(top, t)
        fire(top - LAG)
    fire(MAX_WATERMARK)
    return out


def _feed(harness: OneInputOperatorTestHarness, rows: list[Any], top: int) -> int:
    """One batch, then the watermark if it rises; returns the largest ``t`` so far."""
    if rows:
        harness.process_element(_batch(rows))
        new = max(top, max(t for _, t, _ in rows))
        if new > top:
            harness.process_watermark(new - LAG)
        return new
    return top


def _fired(harnesses: list[OneInputOperatorTestHarness]) -> list[tuple[int, int, Any]]:
    out = []
    for harness in harnesses:
        for batch, stamp in harness.get_output():
            rows = batch.to_pylist()
            assert {r["at"] for r in rows} == {stamp}  # stamped with the timer's time
            out += [(r["k"], r["at"], r["total"]) for r in rows]
    return out


_ROWS = st.lists(st.tuples(st.integers(0, 5), st.integers(0, 60), st.integers(1, 9)), max_size=12)


@settings(max_examples=30, deadline=None)
@given(batches=st.lists(_ROWS, min_size=1, max_size=6), split=st.integers(0, 6))
def test_outputs_equal_a_per_record_model_across_a_rescaling_restore(
    batches: list[list[Any]], split: int
) -> None:
    split = min(split, len(batches))
    top = -(2**62)
    with _op(FlushAfter()) as (op, harness):
        for rows in batches[:split]:
            top = _feed(harness, rows, top)
        blobs = op.snapshot_key_groups()
        got = _fired([harness])
    for subtask in range(2):  # the rest on two subtasks, each with its key groups' rows
        mine = key_group_range_for_subtask(16, 2, subtask)
        with _op(FlushAfter(), subtask=subtask, parallelism=2, blobs=blobs) as (op, h):
            sub_top = top
            for rows in batches[split:]:
                own = [r for r in rows if assign_to_key_group(r[0], 16) in mine]
                if own:
                    h.process_element(_batch(own))
                new = max(sub_top, max((t for _, t, _ in rows), default=sub_top))
                if new > sub_top:  # the watermark reaches every subtask
                    h.process_watermark(new - LAG)
                sub_top = new
            h.process_watermark(MAX_WATERMARK)
            got += _fired([h])
    assert sorted(got, key=repr) == sorted(_model(batches), key=repr)


class ProcessingTimers(KeyedBatchProcessFunction):
    def process_batch(self, batch: pa.RecordBatch, ctx: Any) -> None:
        now = ctx.current_processing_time()
        ctx.register_processing_time_timers(now + 100)
        ctx.register_processing_time_timers(now + 200)
        if batch.column("v")[0].as_py() < 0:
            ctx.delete_processing_time_timers(now + 100)

    def on_timer(self, timestamp: int, ctx: Any) -> pa.RecordBatch:
        assert ctx.time_domain() == TimeDomain.PROCESSING_TIME
        return ctx.keys().append_column("at", pa.array([timestamp] * ctx.keys().num_rows))


def test_processing_time_timers_fire_restore_and_delete() -> None:
    with _op(ProcessingTimers()) as (op, harness):
        harness.set_processing_time(1_000)
        harness.process_element(_batch([(1, 0, 1), (2, 0, 1)]))
        harness.set_processing_time(1_050)
        assert harness.get_output() == []
        harness.set_processing_time(1_100)
        [(batch, stamp)] = harness.get_output()
        assert sorted(batch.to_pylist(), key=repr) == [{"k": 1, "at": 1_100}, {"k": 2, "at": 1_100}]
        assert stamp is None  # processing-time output carries no timestamp
        blobs = op.snapshot_key_groups()  # the timers at 1_200 are pending
    with _op(ProcessingTimers(), blobs=blobs) as (op, harness):
        harness.set_processing_time(1_300)  # restored timers are scheduled at open
        fired = [r for b in harness.extract_output_values() for r in b.to_pylist()]
        assert sorted(fired, key=repr) == [
            {"k": 1, "at": 1_200}, {"k": 2, "at": 1_200}]  # fmt: skip
        harness.process_element(_batch([(3, 0, -1)]))  # registers 1_400 and 1_500, deletes 1_400
        harness.set_processing_time(1_600)
        assert [b.to_pylist() for b in harness.extract_output_values()][-1] == [
            {"k": 3, "at": 1_500}
        ]


def test_string_state_and_compound_keys() -> None:
    name = BatchValueStateDescriptor("last", pa.string())

    class Last(KeyedBatchProcessFunction):
        def process_batch(self, batch: pa.RecordBatch, ctx: Any) -> pa.RecordBatch:
            state = ctx.get_state(name)
            before = state.value()
            last = np.zeros(ctx.keys().num_rows, dtype=np.int64)
            last[ctx.key_index()] = np.arange(batch.num_rows)  # the last row of each key wins
            state.update(batch.column("s").take(pa.array(last)))
            return ctx.keys().append_column("before", before)

    op = BatchProcessOperator(Last(), ["a", "b"])
    with OneInputOperatorTestHarness(op, name="Last", max_parallelism=16) as harness:
        rows = {"a": ["x", "x", "y"], "b": [1, 1, 1], "s": ["p", "q", "r"]}
        harness.process_element(pa.record_batch(rows))
        harness.process_element(pa.record_batch(rows))
        second = harness.extract_output_values()[-1].to_pylist()
    assert sorted(second, key=repr) == [{"a": "x", "b": 1, "before": "q"},
                                        {"a": "y", "b": 1, "before": "r"}]  # fmt: skip


def test_bad_updates_and_types_name_operator_state_and_subtask() -> None:
    class Wrong(KeyedBatchProcessFunction):
        def __init__(self, values: Any, descriptor: BatchValueStateDescriptor = TOTAL) -> None:
            self.values, self.descriptor = values, descriptor

        def process_batch(self, batch: pa.RecordBatch, ctx: Any) -> None:
            ctx.get_state(self.descriptor).update(self.values)

    batch = _batch([(1, 0, 1), (2, 0, 1)])
    where = r"operator 'Keyed Batch Process' \(subtask 1/1\): state 'total' \(int64\)"
    with (
        _op(Wrong([1])) as (_, h),
        pytest.raises(BatchError, match=where + ".*1 values for 2 keys"),
    ):
        h.process_element(batch)
    with _op(Wrong(["a", "b"])) as (_, h), pytest.raises(BatchError, match="not int64"):
        h.process_element(batch)
    with _op(Wrong([1, 2])) as (op, h):
        h.process_element(batch)
        blobs = op.snapshot_key_groups()
    retyped = Wrong([1, 2], BatchValueStateDescriptor("total", pa.string()))
    with (
        _op(retyped, blobs=blobs) as (_, h),
        pytest.raises(BatchError, match="'total' is declared string but holds int64"),
    ):
        h.process_element(batch)


def test_keys_whose_state_was_cleared_do_not_pile_up() -> None:
    with _op(FlushAfter()) as (op, harness):
        for start in range(0, 5000, 500):  # 5000 keys, each flushed (cleared) by its timer
            harness.process_element(_batch([(k, start, 1) for k in range(start, start + 500)]))
            harness.process_watermark(start + DELAY)
        assert len(_fired([harness])) == 5000
        assert op.states_table().num_slots <= 2048  # without the drop: 5000
        with pytest.raises(BatchError, match=r"key column\(s\) \['k'\] not in the batch"):
            harness.process_element(pa.record_batch({"t": [1], "v": [1]}))


def test_batch_mode_fires_the_processing_time_timers_at_the_end_of_input() -> None:
    for mode, fired in (("STREAMING", 0), ("BATCH", 2)):
        config = Configuration({"execution.runtime-mode": mode})
        op = BatchProcessOperator(ProcessingTimers(), ["k"])
        with OneInputOperatorTestHarness(op, name="P", config=config) as harness:
            harness.process_element(_batch([(1, 0, 1)]))
            harness.finish()
            assert len(harness.get_output()) == fired, mode  # a call per timer timestamp
