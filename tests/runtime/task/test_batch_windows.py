"""Event time and event-time windows of batch streams: window results equal a per-record
model of Flink's windows (tumbling and sliding, late rows dropped), watermarks follow each
batch, and window state survives snapshot, restore and rescaling through key-group blobs."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.runtime.task.batch_harness import (
    AGGREGATE,
    Batched,
    flink_window_rows,
    keyed_batch_harness,
)

from undertow.common import Configuration
from undertow.core.errors import BatchError
from undertow.core.types import MAX_WATERMARK
from undertow.runtime.task.batch_windows import BatchEventTime, BatchWindowAggregate
from undertow.runtime.task.window_aggregates import ColumnAggregate
from undertow.testing.harness import OneInputOperatorTestHarness, Watermark


def _windows(kind: str, column: str | None, size: int, slide: int, *, subtask: int = 0,
             parallelism: int = 1, blobs: dict[int, bytes] | None = None,
             ) -> Batched[BatchWindowAggregate]:  # fmt: skip
    op = BatchWindowAggregate([ColumnAggregate.of(kind, column)], ["k"], "t", size, slide, 0)
    return keyed_batch_harness(op, "Window Batch", subtask=subtask, parallelism=parallelism,
                               blobs=blobs)  # fmt: skip


def _batch(rows: list[tuple[int, int, int]]) -> pa.RecordBatch:
    k, t, v = zip(*rows) if rows else ((), (), ())
    return pa.RecordBatch.from_pydict({"k": pa.array(k, pa.int64()), "t": pa.array(t, pa.int64()),
                                       "v": pa.array(v, pa.int64())})  # fmt: skip


def _results(harness: OneInputOperatorTestHarness) -> dict[tuple[int, int], Any]:
    out: dict[tuple[int, int], Any] = {}
    for batch, stamp in harness.get_output():
        for row in batch.to_pylist():
            assert stamp == row["window_end"] - 1
            key = (row["k"], row["window_start"])
            assert key not in out, f"window {key} fired twice"
            out[key] = row[next(n for n in row if n not in ("k", "window_start", "window_end"))]
    return out


def _model(kind: str, steps: list[Any], size: int, slide: int) -> dict[tuple[int, int], Any]:
    """Flink's event-time windows record by record (:func:`flink_window_rows`), aggregated."""
    return {key: AGGREGATE[kind]([v for v, in rows])
            for key, rows in flink_window_rows(steps, size, slide).items()}  # fmt: skip


row = st.tuples(st.integers(0, 5), st.integers(0, 200), st.integers(-50, 50))
steps = st.lists(st.one_of(st.lists(row, min_size=1, max_size=12), st.integers(0, 260)),
                 max_size=12)  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(kind=st.sampled_from(["sum", "min", "max", "count", "mean"]), plan=steps,
       shape=st.sampled_from([(10, 10), (30, 10), (25, 10), (7, 3)]))  # fmt: skip
def test_windows_fire_what_flinks_per_record_windows_fire(
    kind: str, plan: list[Any], shape: tuple[int, int]
) -> None:
    size, slide = shape
    with _windows(kind, None if kind == "count" else "v", size, slide) as (op, harness):
        for step in plan:
            if isinstance(step, int):
                harness.process_watermark(step)
            else:
                harness.process_element(_batch(step))
        harness.process_watermark(MAX_WATERMARK)
        got = _results(harness)
    want = _model(kind, [*plan, MAX_WATERMARK], size, slide)
    assert got.keys() == want.keys()
    for key, value in want.items():
        assert got[key] == pytest.approx(value), key
    assert op.table is None or op.table.num_slots == 0  # fired windows are forgotten


def test_late_rows_are_dropped_and_counted() -> None:
    with _windows("sum", "v", 10, 10) as (op, harness):
        harness.process_element(_batch([(1, 5, 1)]))
        harness.process_watermark(9)  # [0, 10) fires
        harness.process_element(_batch([(1, 3, 100), (1, 12, 2)]))
        harness.process_watermark(MAX_WATERMARK)
        assert _results(harness) == {(1, 0): 1, (1, 10): 2}
        assert op.late_rows_dropped == 1


def test_window_state_rescales_through_its_key_group_blobs() -> None:
    rows = [(k, t, k * 100 + t) for k in range(12) for t in (1, 4, 15)]
    with _windows("sum", "v", 10, 10) as (op, harness):
        harness.process_element(_batch(rows))
        harness.process_watermark(9)  # [0, 10) fires before the snapshot; [10, 20) is state
        blobs = op.snapshot_key_groups()
    merged: dict[tuple[int, int], Any] = {}
    for subtask in range(3):
        with _windows("sum", "v", 10, 10, subtask=subtask, parallelism=3, blobs=blobs) as (
            _,
            again,
        ):
            again.process_watermark(MAX_WATERMARK)  # restored windows fire with no new batch
            merged.update(_results(again))
    assert merged == {(k, 10): k * 100 + 15 for k in range(12)}


def test_event_time_stamps_batches_and_emits_a_watermark_after_each() -> None:
    op = BatchEventTime("t", 5)
    harness = OneInputOperatorTestHarness(op, name="Event Time")
    with harness:
        harness.process_element(_batch([(0, 20, 0), (0, 30, 0)]))
        harness.process_element(_batch([(0, 10, 0)]))  # older: no new watermark
        harness.process_watermark(1000)  # upstream watermarks are replaced ...
        harness.process_watermark(MAX_WATERMARK)  # ... except the end of input
        assert [stamp for _, stamp in harness.get_output()] == [30, 10]
        assert harness.get_watermarks() == [24, MAX_WATERMARK]


def test_batches_that_arrive_together_get_a_watermark_each() -> None:
    with OneInputOperatorTestHarness(BatchEventTime("t", 0), name="Event Time") as harness:
        harness.process_elements([_batch([(0, 5, 0)]), _batch([(0, 3, 0)]), _batch([(0, 15, 0)])])
        events = harness.get_output_with_watermarks()
    shown = [e.timestamp if isinstance(e, Watermark) else e[1] for e in events]
    assert shown == [5, 4, 3, 15, 14]  # batch (its stamp), then its watermark if it rose


@pytest.mark.parametrize("unit, factor", [("s", 1000), ("ms", 1), ("us", 0.001), ("ns", 1e-6)])
def test_event_time_reads_timestamp_columns_in_any_unit(unit: str, factor: float) -> None:
    op = BatchEventTime("t", 0)
    harness = OneInputOperatorTestHarness(op, name="Event Time")
    batch = pa.RecordBatch.from_pydict({"t": pa.array([5_000_000], pa.timestamp(unit))})
    with harness:
        harness.process_element(batch)
        assert harness.get_output()[0][1] == int(5_000_000 * factor)


def test_bad_time_columns_are_errors_naming_operator_and_column() -> None:
    op = BatchEventTime("t", 0)
    harness = OneInputOperatorTestHarness(op, name="Event Time")
    with harness, pytest.raises(BatchError, match=r"operator 'Event Time'.*'t' has 1 null"):
        harness.process_element(pa.RecordBatch.from_pydict({"t": pa.array([1, None])}))
    with (
        _windows("sum", "v", 10, 10) as (_, windows),
        pytest.raises(BatchError, match=r"no event-time column 't'"),
    ):
        windows.process_element(pa.RecordBatch.from_pydict({"k": [1], "v": [1]}))


def _model_with_lateness(
    steps: list[Any], size: int, lateness: int
) -> tuple[list[tuple[Any, ...]], list[tuple[int, int, int]]]:
    """Every firing ``(k, start, sum)`` of Flink's tumbling windows with allowed lateness,
    where the late rows of one batch fire a window once (after the batch); and the rows too
    late for their window (the side output of late data)."""
    open_: dict[tuple[int, int], int] = {}
    fired: set[tuple[int, int]] = set()
    out = []
    too_late = []
    watermark = -(2**63)
    for step in steps:
        if isinstance(step, int):
            if step <= watermark:
                continue
            watermark = step
            for key in sorted(open_):
                if key[1] + size - 1 <= watermark and key not in fired:
                    out.append((*key, open_[key]))
                    fired.add(key)
            for key in [w for w in open_ if w[1] + size - 1 + lateness <= watermark]:
                del open_[key]
                fired.discard(key)
            continue
        touched = set()
        for k, t, v in step:
            key = (k, t - t % size)
            if key[1] + size - 1 + lateness > watermark:
                open_[key] = open_.get(key, 0) + v
                touched.add(key)
            else:
                too_late.append((k, t, v))
        for key in sorted(touched):
            if key[1] + size - 1 <= watermark:
                out.append((*key, open_[key]))
                fired.add(key)
    return out, too_late


@settings(max_examples=40, deadline=None)
@given(plan=steps, lateness=st.sampled_from([0, 5, 30]))
def test_allowed_lateness_fires_again_for_late_rows_then_forgets_and_sides_out_later_rows(
    plan: list[Any], lateness: int
) -> None:
    op = BatchWindowAggregate(
        [ColumnAggregate.of("sum", "v")], ["k"], "t", 10, 10, 0, lateness, late_tag="late"
    )
    with OneInputOperatorTestHarness(op, name="Window Batch", max_parallelism=16) as harness:
        for step in plan:
            if isinstance(step, int):
                harness.process_watermark(step)
            else:
                harness.process_element(_batch(step))
        harness.process_watermark(MAX_WATERMARK)
        got = [(r["k"], r["window_start"], r["v"])
               for batch, _ in harness.get_output() for r in batch.to_pylist()]  # fmt: skip
        late = harness.output.side_outputs.get("late", [])
        side = [(r["k"], r["t"], r["v"]) for batch, _ in late for r in batch.to_pylist()]
    want, too_late = _model_with_lateness([*plan, MAX_WATERMARK], 10, lateness)
    assert sorted(got) == sorted(want)
    assert side == too_late  # in input order
    assert op.table is None or op.table.num_slots == 0  # every window forgotten at the end


def test_processing_time_windows_fire_by_the_clock_and_after_a_restore() -> None:
    def op() -> BatchWindowAggregate:
        return BatchWindowAggregate([ColumnAggregate.of("sum", "v")], ["k"], None, 100, 100, 0)

    with OneInputOperatorTestHarness(op(), max_parallelism=16) as harness:
        harness.set_processing_time(1_010)
        harness.process_element(_batch([(1, 0, 1), (2, 0, 2), (1, 0, 3)]))  # t is not used
        harness.process_watermark(MAX_WATERMARK - 1)  # watermarks fire nothing here
        harness.set_processing_time(1_050)
        harness.process_element(_batch([(1, 0, 10)]))
        assert harness.get_output() == []
        harness.set_processing_time(1_120)
        harness.process_element(_batch([(2, 0, 5)]))  # in the next window
        harness.set_processing_time(1_099 + 100 - 1)
        got = {(r["k"], r["window_start"]): r["v"]
               for b in harness.extract_output_values() for r in b.to_pylist()}  # fmt: skip
        assert got == {(1, 1_000): 14, (2, 1_000): 2}
        assert [stamp for _, stamp in harness.get_output()] == [1_099]
        blobs = harness.operator.snapshot_key_groups()  # type: ignore[attr-defined]
    restored = op()
    harness = OneInputOperatorTestHarness(restored, max_parallelism=16)
    harness.setup()
    restored.restore_key_groups(blobs)
    with harness:  # open() schedules the restored window
        harness.set_processing_time(1_199)
        [batch] = harness.extract_output_values()
        assert batch.to_pylist() == [{"k": 2, "window_start": 1_100, "window_end": 1_200, "v": 5}]


def test_sliding_processing_time_windows_count_each_row_in_every_window() -> None:
    op = BatchWindowAggregate([ColumnAggregate.of("count", None)], ["k"], None, 30, 10, 0)
    with OneInputOperatorTestHarness(op, max_parallelism=16) as harness:
        harness.set_processing_time(25)
        harness.process_element(_batch([(1, 0, 0), (1, 0, 0)]))
        harness.set_processing_time(60)
        got = {r["window_start"]: r["count"]
               for b in harness.extract_output_values() for r in b.to_pylist()}  # fmt: skip
    assert got == {0: 2, 10: 2, 20: 2}


def test_batch_mode_fires_open_processing_time_windows_at_the_end_of_input() -> None:
    for mode, fired in (("STREAMING", []), ("BATCH", [{"k": 1, "window_start": 0,
                                                       "window_end": 100, "v": 3}])):  # fmt: skip
        op = BatchWindowAggregate([ColumnAggregate.of("sum", "v")], ["k"], None, 100, 100, 0)
        config = Configuration({"execution.runtime-mode": mode})
        with OneInputOperatorTestHarness(op, max_parallelism=16, config=config) as harness:
            harness.process_element(_batch([(1, 0, 3)]))
            harness.finish()
            assert [r for b in harness.extract_output_values() for r in b.to_pylist()] == fired


def test_a_batch_of_known_keys_and_windows_takes_its_slots_from_the_cache(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with _windows("sum", "v", 10, 10) as (op, harness):
        harness.process_element(_batch([(1, 3, 1), (2, 4, 1), (1, 15, 1)]))
        assert op.table is not None

        def refuse(*args: Any) -> Any:
            raise AssertionError("the table's dict was asked for a known (key, window)")

        monkeypatch.setattr(op.table, "slots_for", refuse)
        harness.process_element(_batch([(2, 5, 10), (1, 16, 10), (1, 6, 10)]))
        monkeypatch.undo()
        harness.process_watermark(MAX_WATERMARK)
        assert _results(harness) == {(1, 0): 11, (2, 0): 11, (1, 10): 11}


def test_a_null_key_is_an_error_naming_the_operator_and_the_column() -> None:
    batch = pa.RecordBatch.from_pydict({"k": pa.array([1, None], pa.int64()),
                                        "t": pa.array([1, 2], pa.int64()),
                                        "v": pa.array([1, 1], pa.int64())})  # fmt: skip
    error = r"Window Batch.*key column 'k' has 1 null"
    with _windows("sum", "v", 10, 10) as (_, harness), pytest.raises(BatchError, match=error):
        harness.process_element(batch)
