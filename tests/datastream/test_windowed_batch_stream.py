"""Keyed and windowed batch streams through the API: the batch path's keyed aggregations
equal the record path's, windows fire (again, with allowed lateness) and misuse is refused
naming the key columns."""

from __future__ import annotations

import json
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.datastream.environments import threads_env

from undertow.common.row import Row
from undertow.core.errors import GraphBuildError
from undertow.datastream import OutputTag, StreamExecutionEnvironment
from undertow.datastream.batch_stream import KeyedBatchStream
from undertow.datastream.connectors.number_seq_batches import NumberSequenceBatchSource
from undertow.datastream.window import (
    EventTimeSessionWindows,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
)
from undertow.datastream.windowed_batch_stream import WindowedBatchStream

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.int64())])


def _record_path(kind: str, rows: list[tuple[int, int]]) -> dict[int, list[Any]]:
    """The record path's running results per key (KeyedStream.sum/min/max, or a reduce)."""
    env = threads_env()
    stream = env.from_collection([Row(k=k, v=v) for k, v in rows]).key_by(lambda r: r.k)
    if kind in ("sum", "min", "max"):
        out = getattr(stream, kind)("v").map(lambda r: (r.k, r.v))
    else:
        out = stream.map(lambda r: (r.k, 1)).key_by(lambda p: p[0]).sum(1)
    per_key: dict[int, list[Any]] = defaultdict(list)
    with out.execute_and_collect() as results:
        for k, value in results:
            per_key[k].append(value)
    return per_key


def _batch_path(kind: str, rows: list[tuple[int, int]], batch_rows: int) -> dict[int, list[Any]]:
    env = threads_env()
    records = env.from_collection([Row(k=k, v=v) for k, v in rows])
    batches = records.to_batches(SCHEMA, max_rows=batch_rows, max_delay=10).set_parallelism(1)
    keyed = batches.key_by("k")  # per key in input order: one to_batches subtask
    out = keyed.count() if kind == "count" else getattr(keyed, kind)("v")
    name = "count" if kind == "count" else "v"
    per_key: dict[int, list[Any]] = defaultdict(list)
    with out.execute_and_collect() as results:
        for batch in results:
            for row in batch.to_pylist():
                per_key[row["k"]].append(row[name])
    return per_key


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kind=st.sampled_from(["sum", "min", "max", "count"]),
    rows=st.lists(st.tuples(st.integers(0, 9), st.integers(-1000, 1000)), min_size=1, max_size=60),
    batch_rows=st.integers(1, 25),
)
def test_batch_path_equals_record_path(kind: str, rows: list[tuple[int, int]],
                                       batch_rows: int) -> None:  # fmt: skip
    assert _batch_path(kind, rows, batch_rows) == _record_path(kind, rows)


def test_keyed_and_windowed_misuse_is_refused_naming_the_key_columns(
    env: StreamExecutionEnvironment,
) -> None:
    batches = env.from_collection([Row(k=1, v=2)]).to_batches(SCHEMA)
    assert isinstance(batches.key_by("k"), KeyedBatchStream)
    refused = r"process_batches\(\) on a keyed batch stream \(key_by\(\['k'\]\)\): expected a Keyed"
    with pytest.raises(GraphBuildError, match=refused):
        batches.key_by("k").process_batches(lambda b, ctx: b)  # type: ignore[arg-type]
    with pytest.raises(GraphBuildError, match=r"map_pandas\(\) on a keyed batch stream"):
        batches.key_by("k").map_pandas(lambda df: df)
    windows = batches.with_event_time("v").key_by("k").window(TumblingEventTimeWindows.of(10))
    with pytest.raises(GraphBuildError, match=r"allowed_lateness\(\).*must be >= 0 ms, got -1"):
        windows.allowed_lateness(-1)
    keyed = batches.with_event_time("v").key_by("k")
    with pytest.raises(GraphBuildError, match=r"sessions with a fixed gap"):
        keyed.window(EventTimeSessionWindows.with_dynamic_gap(lambda r: 5))
    sessions = keyed.window(EventTimeSessionWindows.with_gap(5)).allowed_lateness(5)
    with pytest.raises(GraphBuildError, match=r"not supported on batch sessions"):
        sessions.sum("v")
    assert isinstance(windows, WindowedBatchStream)


def test_allowed_lateness_fires_a_window_again_and_later_rows_go_to_a_side_output(
    env: StreamExecutionEnvironment, tmp_path: Path
) -> None:
    env.set_parallelism(1)
    schema = pa.schema([("k", pa.int64()), ("t", pa.int64())])
    rows = [[(1, 5)], [(1, 15)], [(1, 3)], [(1, 30)], [(1, 4)]]  # 3: late, kept; 4: too late
    batches = [pa.record_batch(list(zip(*r)), schema=schema) for r in rows]
    windows = env.from_collection(batches).as_batches().with_event_time("t").key_by("k")
    late = OutputTag("late")
    windowed = windows.window(TumblingEventTimeWindows.of(10)).allowed_lateness(10)
    counts = windowed.side_output_late_data(late).count()
    side = tmp_path / "late.json"
    counts.get_side_output(late).add_sink(lambda b: side.write_text(json.dumps(b.to_pylist())))
    fired = [(r["window_start"], r["count"]) for b in counts.execute_and_collect()
             for r in b.to_pylist()]  # fmt: skip
    assert fired == [(0, 1), (0, 2), (10, 1), (30, 1)]
    assert json.loads(side.read_text()) == [{"k": 1, "t": 4}]  # the row no window took


def test_processing_time_windows_through_the_api(env: StreamExecutionEnvironment) -> None:
    """Rows fall in the windows of the clock; windows still open at the end do not fire (as
    Flink's streaming mode), so only what fired before the end is checked."""
    env.set_parallelism(1)

    def slow(batch: pa.RecordBatch) -> pa.RecordBatch:
        time.sleep(0.02)
        return pa.record_batch({"k": pc.remainder(batch.column("value"), 2)})

    source = NumberSequenceBatchSource(0, 199, batch_rows=10)
    keyed = env.from_source(source, None, "n").as_batches().map_batches(slow).key_by("k")
    counts = keyed.window(TumblingProcessingTimeWindows.of(50)).count()
    fired = [r for b in counts.execute_and_collect() for r in b.to_pylist()]
    assert fired and all(r["window_end"] - r["window_start"] == 50 for r in fired)
    assert sum(r["count"] for r in fired) <= 200 and {r["k"] for r in fired} == {0, 1}
    windows = keyed.window(TumblingProcessingTimeWindows.of(50))
    with pytest.raises(GraphBuildError, match="processing-time windows have no late rows"):
        windows.allowed_lateness(10)


def test_aggregate_computes_several_named_aggregates_per_window_in_one_operator(
    env: StreamExecutionEnvironment,
) -> None:
    rows = [(k, t, t * 10 + k) for t in range(0, 40, 3) for k in (1, 2)]
    batch = pa.record_batch({"k": [r[0] for r in rows], "t": [r[1] for r in rows],
                             "v": [r[2] for r in rows]})  # fmt: skip
    windows = env.from_collection([batch]).as_batches().with_event_time("t").key_by("k")
    stats = windows.window(TumblingEventTimeWindows.of(10)).aggregate(
        total=("v", "sum"), n=(None, "count"), low=("v", "min"), high=("v", "max"),
        avg=("v", "mean"), rows=("v", "count"),
    )  # fmt: skip
    assert stats.get_name() == "Window Batch Aggregate"  # one operator computes them all
    got = [r for b in stats.execute_and_collect() for r in b.to_pylist()]
    want = []
    for k in (1, 2):
        for start in range(0, 40, 10):
            vs = [v for key, t, v in rows if key == k and start <= t < start + 10]
            want.append({"k": k, "window_start": start, "window_end": start + 10,
                         "total": sum(vs), "n": len(vs), "low": min(vs), "high": max(vs),
                         "avg": sum(vs) / len(vs), "rows": len(vs)})  # fmt: skip
    assert sorted(got, key=lambda r: (r["k"], r["window_start"])) == want


def test_aggregate_misuse_is_refused_naming_the_aggregate(env: StreamExecutionEnvironment) -> None:
    batches = env.from_collection([Row(k=1, v=2)]).to_batches(SCHEMA).with_event_time("v")
    windows = batches.key_by("k").window(TumblingEventTimeWindows.of(10))
    for named, error in (
        ({}, r"aggregate\(\) on the windows of key_by\(\['k'\]\): name at least one"),
        ({"s": ("v", "median")}, r"aggregate\(s=\('v', 'median'\)\).*expected \(column, kind\)"),
        ({"s": "v"}, r"aggregate\(s='v'\).*expected \(column, kind\)"),
        ({"window_end": ("v", "sum")}, r"'window_end' is a key or window column"),
        ({"k": ("v", "sum")}, r"'k' is a key or window column"),
        ({"s": (None, "sum")}, r"aggregate\(s=\(None, 'sum'\)\): sum needs a column"),
        ({"s": ("k", "max")}, r"'k' is a key column"),
    ):
        with pytest.raises(GraphBuildError, match=error):
            windows.aggregate(**named)


def test_to_batches_emits_its_buffered_rows_before_the_end_of_input_watermark() -> None:
    """A partial batch that ``to_batches`` holds when its input ends goes out before the end
    of input's watermark: with a network edge in front of ``to_batches`` (a collection source
    of parallelism 1 feeding two subtasks) that watermark reached it first, was forwarded at
    once, fired every window, and the last rows of each subtask were dropped as late."""
    env = threads_env(parallelism=2)
    schema = pa.schema([("user", pa.string()), ("amount", pa.int64()), ("ts", pa.int64())])
    rows = [Row(user=f"u{i % 3}", amount=i, ts=i * 700) for i in range(20)]
    late = OutputTag("late")
    windows = (
        env.from_collection(rows)
        .to_batches(schema, max_rows=4, max_delay=60_000)
        .with_event_time("ts")
        .key_by("user")
        .window(TumblingEventTimeWindows.of(5000))
        .side_output_late_data(late)
        .aggregate(total=("amount", "sum"), n=(None, "count"))
    )
    dropped = windows.get_side_output(late).to_records().map(lambda r: ("late", r.amount))
    out = windows.to_records().map(lambda r: (r.user, r.window_start, r.total, r.n))
    with out.union(dropped).execute_and_collect() as results:
        got = sorted(results, key=str)
    expected: dict[tuple[str, int], list[int]] = defaultdict(list)
    for r in rows:
        expected[(r.user, r.ts // 5000 * 5000)].append(r.amount)
    assert got == sorted(((u, s, sum(v), len(v)) for (u, s), v in expected.items()), key=str)
