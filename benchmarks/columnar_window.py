"""Event-time tumbling windows on batch streams against Spark, in rows per second (issue 31).

The job: ``i -> (k = i % 10,000, v = i, event time) -> tumbling 1 s event-time windows per
key -> sum(v) and count -> no-op sink``, parallelism 2, both engines in one run:

- undertow: ``NumberSequenceBatchSource`` -> ``map_batches`` (:class:`EventTimeColumns`) ->
  ``with_event_time("ts")`` (no out-of-orderness) -> ``key_by("k")`` ->
  ``window(TumblingEventTimeWindows.of(1 s))`` -> ``aggregate(sum=("v", "sum"), count=(None,
  "count"))`` (one window operator) -> no-op sink, on the ``local`` target with checkpoints
  every second (as benchmarks/columnar.py's running sum); steady-state rows/s
  (:func:`columnar.steady_rate`), the median of ``--rounds`` rounds that alternate it with
  its peer, the same windows as ``sum("v")`` and ``count()``: two window operators on the
  keyed stream, each batch partitioned and sent twice (how the job ran before ``aggregate``);
- Spark Structured Streaming, native expressions: ``rate-micro-batch`` ->
  ``withWatermark(ts, "0 seconds")`` -> ``groupBy(window(ts, "1 second"), k)
  .agg(sum(v), count(*))`` in append mode to the ``noop`` sink, ``local[2]``, with a
  checkpoint location; best of a few micro-batch sizes, rows/s over the micro-batches' own
  durations after the first.

Event time is made the same on both sides: ``--event-rate`` rows per second of event time
(default 1,000,000), so each 1 s window holds that many rows (100 per key) on either engine.
Spark's rows carry ``ts = value * 1000 // event_rate`` ms (its rate source's own ``timestamp``
is one instant per micro-batch, which would put a whole micro-batch into one window and make
the window's size depend on the batch size). Undertow's source splits its range by subtask, so
a row's value says nothing of its place in time; :func:`event_times` numbers each subtask's
rows and spaces them ``parallelism / event_rate`` seconds apart, so the subtasks advance
together and the job as a whole makes ``event_rate`` rows per second of event time.

Prints the load average at the start and the end (and with each round), a table with the
ratios, and LAST::

    target windowed-vs-spark-native: FIGURE (goal 1.0x): met|missed

Usage::

    python benchmarks/columnar_window.py [--rows N] [--rounds 3] [--spark-batches 1000000,4000000]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from undertow.common import Configuration
from undertow.datastream import StreamExecutionEnvironment
from undertow.datastream.connectors import DiscardingSink
from undertow.datastream.connectors.number_seq_batches import NumberSequenceBatchSource
from undertow.datastream.window import TumblingEventTimeWindows

sys.path.insert(0, str(Path(__file__).resolve().parent))
import columnar
import process_cpu

KEYS = 10_000
WINDOW_MS = 1000
PARALLELISM = 2


def event_times(first: int, rows: int, event_rate: int, parallelism: int) -> np.ndarray:
    """Event times (ms) of a subtask's rows ``first .. first + rows - 1`` (counted within the
    subtask): ``parallelism`` subtasks together make ``event_rate`` rows per second of event
    time, so each spaces its own rows ``parallelism * 1000 / event_rate`` ms apart."""
    index = np.arange(first, first + rows, dtype=np.int64)
    return index * (parallelism * 1000) // event_rate


class EventTimeColumns:
    """``map_batches``: ``value`` -> ``k = value % KEYS``, ``v = value``, ``ts`` (ms, from
    :func:`event_times`). One instance per subtask (each task unpickles its own); it counts
    the rows it has seen, not checkpointed (the benchmark restores nothing)."""

    def __init__(self, event_rate: int, parallelism: int) -> None:
        self.event_rate = event_rate
        self.parallelism = parallelism
        self.seen = 0

    def map_batches(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        value = batch.column(0).to_numpy()
        ts = event_times(self.seen, len(value), self.event_rate, self.parallelism)
        self.seen += len(value)
        return pa.RecordBatch.from_arrays(
            [pa.array(value % KEYS), pa.array(value), pa.array(ts)], names=["k", "v", "ts"]
        )


def undertow_window(rows: int, batch_rows: int, event_rate: int, checkpoint_dir: str,
                    one_operator: bool = True) -> float:  # fmt: skip
    """Seconds to run the windowed job over ``rows`` numbers: sum and count in one window
    operator (``aggregate``), or in two (``sum`` and ``count``)."""
    env = StreamExecutionEnvironment.get_execution_environment(Configuration({
        "execution.target": "local", "rest.port": "-1", **columnar.CHECKPOINTS,
        "execution.checkpointing.dir": checkpoint_dir,
        "taskmanager.memory.segment-size": "1 mb",  # as the running sum: a batch, a buffer
    }))  # fmt: skip
    env.set_parallelism(PARALLELISM)
    source = NumberSequenceBatchSource(0, rows - 1, batch_rows=batch_rows)
    windows = (
        env.from_source(source, None, "numbers")
        .as_batches()  # type: ignore[arg-type]
        .map_batches(EventTimeColumns(event_rate, PARALLELISM))
        .with_event_time("ts")
        .key_by("k")
        .window(TumblingEventTimeWindows.of(WINDOW_MS))
    )
    if one_operator:
        windows.aggregate(sum=("v", "sum"), count=(None, "count")).sink_to(DiscardingSink())
    else:
        windows.sum("v").sink_to(DiscardingSink())
        windows.count().sink_to(DiscardingSink())
    start = time.perf_counter()
    env.execute("columnar tumbling window")
    return time.perf_counter() - start


def spark_window(spark: Any, rows: int, per_batch: int, event_rate: int, workdir: str) -> float:
    """Rows/s of Spark's windowed query over the micro-batches after the first."""
    from pyspark.sql import functions as F

    df = (
        spark.readStream.format("rate-micro-batch").option("rowsPerBatch", per_batch)
        .option("numPartitions", PARALLELISM).load()
        .select((F.col("value") % KEYS).alias("k"), F.col("value").alias("v"),
                F.expr(f"timestamp_millis(value * 1000 div {event_rate})").alias("ts"))
        .withWatermark("ts", "0 seconds")
        .groupBy(F.window("ts", f"{WINDOW_MS // 1000} second"), "k")
        .agg(F.sum("v").alias("sum"), F.count("*").alias("count"))
    )  # fmt: skip
    return columnar.timed_micro_batches(df, "append", rows, per_batch, workdir)[0]


def watched(measure: Callable[[], float]) -> tuple[float, str]:
    """``measure()`` and the cores this process's descendants (the job's workers; Spark's JVM)
    ran and waited on a run queue meanwhile (:func:`process_cpu.cores`): a round short of CPU
    shows as a wait as long as its run or longer, on either side."""
    started = time.perf_counter()
    with process_cpu.RunQueueWait(os.getpid(), period=0.1) as queue:
        rate = measure()
    seconds = time.perf_counter() - started
    return rate, process_cpu.cores(queue.ran_s, queue.waited_s, seconds, queue.neighbours)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=8_000_000)
    parser.add_argument("--batch-rows", type=int, default=32768)
    parser.add_argument("--event-rate", type=int, default=1_000_000,
                        help="rows per second of event time (both engines)")  # fmt: skip
    parser.add_argument("--spark-batches", default="1000000,4000000,8000000")
    parser.add_argument("--rounds", type=int, default=3,
                        help="one and two window operators, alternating")  # fmt: skip
    args = parser.parse_args()
    print(f"load average at start: {columnar._load()} (shared machine: figures move with it)")
    workdir = tempfile.mkdtemp(prefix="columnar-window-bench-")
    try:
        checkpoints = os.path.join(workdir, "undertow")
        rates: dict[bool, list[float]] = {True: [], False: []}
        for round_ in range(args.rounds):
            for one in (True, False) if round_ % 2 == 0 else (False, True):
                job = partial(undertow_window, batch_rows=args.batch_rows,
                              event_rate=args.event_rate, checkpoint_dir=checkpoints,
                              one_operator=one)  # fmt: skip
                rate, cores = watched(partial(columnar.steady_rate, job, args.rows))
                rates[one].append(rate)
                print(f"  round {round_}: {'one operator' if one else 'two operators'}: "
                      f"{rate:,.0f} rows/s, job's {cores} (load {columnar._load()})")  # fmt: skip
        ours, two = (sorted(rates[one])[len(rates[one]) // 2] for one in (True, False))
        spark = columnar._spark_session()
        native = {}
        for per_batch in (int(b) for b in args.spark_batches.split(",")):
            rows = max(args.rows, 3 * per_batch)
            native[per_batch], cores = watched(
                partial(spark_window, spark, rows, per_batch, args.event_rate, workdir)
            )
            print(f"  spark native, {per_batch:,} rows per micro-batch: {native[per_batch]:,.0f} "
                  f"rows/s, Spark's {cores} (load {columnar._load()})")  # fmt: skip
        spark.stop()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    best = max(native, key=native.__getitem__)
    print(f"\ntumbling 1 s event-time windows, {KEYS:,} keys, sum and count, "
          f"{args.event_rate:,} rows per second of event time")  # fmt: skip
    print(f"{'engine':<58}{'rows/s':>14}{'vs Spark native':>17}")
    for name, rate in (
        (f"undertow columnar, aggregate() ({args.batch_rows:,}-row batches)", ours),
        ("undertow columnar, sum() and count(): two operators", two),
        (f"Spark native (best: {best:,} rows/batch)", native[best]),
    ):
        print(f"{name:<58}{rate:>14,.0f}{rate / native[best]:>17.2f}")
    print(f"undertow medians of {args.rounds} rounds; one operator / two operators: "
          f"{ours / two:.2f}x")  # fmt: skip
    print(f"load average at end: {columnar._load()} (shared machine)")
    ratio = ours / native[best]
    print(f"target windowed-vs-spark-native: {ratio:.2f}x (goal 1.0x): "
          f"{'met' if ratio >= 1.0 else 'missed'}")  # fmt: skip


if __name__ == "__main__":
    main()
