"""Keyed running sum on batch streams against Spark, in rows per second (issue 31).

The job: ``i -> (i % 1000, 1) -> key by -> running sum -> no-op sink``, parallelism 2,
checkpoints every second, run to the end of ``--rows`` numbers (``--columnar-rows`` for the
columnar job), five ways in one run:

- undertow columnar: ``NumberSequenceBatchSource`` -> ``map_batches`` -> ``key_by("k")`` ->
  ``sum("v")`` -> ``DiscardingSink``, on the ``local`` target (worker processes, TCP), with
  1 MiB network buffers so a record batch takes one buffer; rows/s
  in steady state (:func:`steady_rate`: the job's start cancels out); once with buffer
  debloating (on by default) and once without (it counts a record batch as one record);
- undertow per record: ``benchmarks/throughput.py``'s job with the same checkpoints, against
  a bare Python loop doing the same per-record work (``benchmarks/record_vs_loop.py``: CPU per
  record of both sides, and rows/s of the job at p=2 against the loop in two processes);
- Spark Structured Streaming, native expressions: ``rate-micro-batch`` source
  (``rowsPerBatch``), ``groupBy(k).sum(v)`` in update mode to the ``noop`` sink, with a
  checkpoint location (Spark checkpoints every micro-batch), ``local[2]``; best of a few batch
  sizes, rows/s over the micro-batches' own durations after the first (Spark's start and
  first code generation are not counted);
- Spark, pandas UDF: the same query with ``applyInPandasWithState`` keeping the sums;
- per-row latency of the columnar job (benchmarks/columnar_latency.py: rows stamped at the
  source, measured at the sink), p50/p99 in ``--latency-rounds`` paced rounds, each paced at
  the rate of a Spark native round run just before it, and once at saturation, beside Spark's
  micro-batch durations (a row waits at least its micro-batch); each run's cores run and
  waited on a run queue, and the worst paced round's timeline.

The latency target is the median of the paced rounds' p99: a paced run used to follow
Spark's rounds by minutes, and a job short of CPU then (its processes waiting on a run queue
several times as long as they ran) missed by seconds while the same pace met in the next run.
The columnar-vs-Spark target is judged on medians: after the first measurements (which pick
Spark's best micro-batch size), ``--spark-rounds`` more rounds alternate the columnar job and
Spark native at that size, and the target is the median of undertow's rates over the median of
Spark's (each side's spread and the per-round ratios are printed). One sample a side swung the
ratio from 0.49x to 2.05x at the same commit: both sides move 2-5x between samples on this
shared machine, and the best of three Spark sizes is the luckiest of three samples.

Prints the load average at the start and the end (the machine is shared: figures move with
it), a table with ratios, and LAST one line per target::

    target NAME: FIGURE (goal GOAL): met|missed

Usage::

    python benchmarks/columnar.py [--rows N] [--columnar-rows N] [--spark-batches 1000000,4000000]

``--columnar-rows`` (32 M by default) sizes the columnar job's runs apart from Spark's
``--rows``: at 20 M rows/s and more, 8 M rows took 0.4 s, less than the job's start moves on a
loaded machine, and the steady rate came out as not measured.
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
from statistics import median_high  # the upper of two middle values, as before

import numpy as np
import pyarrow as pa

from undertow.common import Configuration
from undertow.datastream import StreamExecutionEnvironment
from undertow.datastream.connectors import DiscardingSink
from undertow.datastream.connectors.number_seq_batches import NumberSequenceBatchSource

sys.path.insert(0, str(Path(__file__).resolve().parent))
import columnar_latency
import record_vs_loop
import throughput

#: Checkpoints every second while a job runs; a bounded run ends without waiting for a final
#: checkpoint (throughput.NO_FINAL_CHECKPOINT: the wait, up to an interval, is wall clock that
#: steady_rate's difference of two runs does not cancel; one round of 2026-11-30 printed 159.92 M
#: rows/s).
CHECKPOINTS = {"execution.checkpointing.interval": "1 s", **throughput.NO_FINAL_CHECKPOINT}
#: Spark native's micro-batch durations (ms) by rows per micro-batch, of the last query run.
SPARK_BATCH_MS: dict[int, list[int]] = {}


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


def _keyed_ones(batch: pa.RecordBatch) -> pa.RecordBatch:
    value = batch.column(0).to_numpy()
    return pa.RecordBatch.from_arrays(
        [pa.array(value % 1000), pa.array(np.ones(len(value), dtype=np.int64))], names=["k", "v"]
    )


def steady_rate(run: Callable[[int], float], rows: int) -> float:
    """Rows/s once the job runs: ``(rows - small) / (t(rows) - t(small))`` for a run of
    ``rows`` and one of an eighth of them, so the start of the job (worker processes, imports:
    seconds on a loaded machine) cancels out, as Spark's figure leaves out Spark's start. A
    first run of ``small`` warms up what starts once per driver (the ``local`` target's fork
    server): timed, it made ``t(small)`` exceed ``t(rows)`` and the rate absurd.

    Floor: ``rows / t(rows)``, the rate with the start counted, which the steady rate cannot be
    below (with a start ``s`` and a rate ``v``, ``t(n) = s + n / v``); a difference below it
    (a small run slowed by the load: at load 48, 5.2 M rows/s with debloating and 24 M
    without in one run, while whole runs of 32 M rows took 1.6-2.3 s either way) is noise, and
    the floor is reported, marked on the line printed."""
    small = max(1, rows // 8)
    run(small)
    t_small = run(small)
    t_large = run(rows)
    floor = rows / t_large
    steady = (rows - small) / (t_large - t_small) if t_large > t_small else 0.0
    if steady < floor:
        print(f"    steady rate below the whole run's: {rows:,} rows took {t_large:.2f} s, "
              f"{small:,} took {t_small:.2f} s; reporting {floor:,.0f} rows/s, the start "
              f"counted (load {_load()})")  # fmt: skip
        return floor
    return steady


def undertow_columnar(
    rows: int, batch_rows: int, checkpoint_dir: str, debloat: bool = True
) -> float:
    """Seconds to run the columnar job over ``rows`` numbers (``debloat``: buffer debloating,
    on by default, which counts a record batch as one record)."""
    env = StreamExecutionEnvironment.get_execution_environment(Configuration({
        "execution.target": "local", "rest.port": "-1", **CHECKPOINTS,
        "execution.checkpointing.dir": checkpoint_dir,
        # a record batch fits one buffer (docs/columnar.md, "Network")
        "taskmanager.memory.segment-size": "1 mb",
        "taskmanager.network.memory.buffer-debloat.enabled": str(debloat).lower(),
    }))  # fmt: skip
    env.set_parallelism(2)
    source = NumberSequenceBatchSource(0, rows - 1, batch_rows=batch_rows)
    (
        env.from_source(source, None, "numbers")
        .as_batches()  # type: ignore[arg-type]
        .map_batches(_keyed_ones)
        .key_by("k")
        .sum("v")
        .sink_to(DiscardingSink())
    )
    start = time.perf_counter()
    env.execute("columnar running sum")
    return time.perf_counter() - start


def _spark_session():  # type: ignore[no-untyped-def]
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable  # Python workers with this venv's pandas
    return (
        SparkSession.builder.master("local[2]").appName("columnar benchmark")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .getOrCreate()
    )  # fmt: skip


def timed_micro_batches(  # type: ignore[no-untyped-def]
    frame, mode: str, rows: int, per_batch: int, workdir: str
) -> tuple[float, list[int]]:
    """Run the streaming ``frame`` to the ``noop`` sink (``mode``: its output mode, a checkpoint
    location in ``workdir``) for at least 3 micro-batches with input and enough of
    ``per_batch`` rows to cover ``rows``; rows/s over the micro-batches' own durations and
    those durations, the first micro-batch left out (it pays Spark's code generation and
    state-store start)."""
    checkpoint = tempfile.mkdtemp(dir=workdir)
    query = (
        frame.writeStream.format("noop").outputMode(mode)
        .option("checkpointLocation", checkpoint).trigger(processingTime="0 seconds").start()
    )  # fmt: skip
    batches = max(3, -(-rows // per_batch))
    try:
        while True:
            progress = [p for p in query.recentProgress if p["numInputRows"]]
            if len(progress) >= batches or query.exception():
                break
            time.sleep(0.2)
        if query.exception():
            raise RuntimeError(query.exception())
    finally:
        query.stop()
    progress = [p for p in query.recentProgress if p["numInputRows"]][1:batches]
    done = sum(p["numInputRows"] for p in progress)
    durations = [p["durationMs"]["triggerExecution"] for p in progress]
    print(f"    micro-batches of {per_batch:,} rows took {durations} ms")
    return done / (sum(durations) / 1000.0), durations


def _run_query(spark, rows: int, per_batch: int, pandas_udf: bool, workdir: str) -> float:  # type: ignore[no-untyped-def]
    """Rows/s over the micro-batches that ran (their own durations)."""
    from pyspark.sql import functions as F
    from pyspark.sql.streaming.state import GroupStateTimeout

    df = (
        spark.readStream.format("rate-micro-batch").option("rowsPerBatch", per_batch)
        .option("numPartitions", 2).load()
        .select((F.col("value") % 1000).alias("k"), F.lit(1).cast("long").alias("v"))
    )  # fmt: skip
    if pandas_udf:
        import pandas as pd

        def running_sum(key, frames, state):  # type: ignore[no-untyped-def]
            total = state.get[0] if state.exists else 0
            for frame in frames:
                sums = frame["v"].cumsum() + total
                total = int(sums.iloc[-1])
                yield pd.DataFrame({"k": frame["k"], "s": sums})
            state.update((total,))

        agg = df.groupBy("k").applyInPandasWithState(
            running_sum, "k long, s long", "s long", "Update", GroupStateTimeout.NoTimeout
        )
    else:
        agg = df.groupBy("k").agg(F.sum("v").alias("s"))
    rate, durations = timed_micro_batches(agg, "update", rows, per_batch, workdir)
    if not pandas_udf:
        SPARK_BATCH_MS[per_batch] = durations
    return rate


def _spread(rates: list[float]) -> str:
    return (f"median {median_high(rates) / 1e6:.2f} M rows/s, {min(rates) / 1e6:.2f}-"
            f"{max(rates) / 1e6:.2f} M")  # fmt: skip


def _paired_rounds(  # type: ignore[no-untyped-def]
    spark, args: argparse.Namespace, per_batch: int, first_native: float, first_ours: float,
    run: Callable[[int], float], workdir: str,
) -> tuple[list[float], list[float]]:  # fmt: skip
    """The columnar job's and Spark native's (``per_batch`` rows a micro-batch) rates over
    the first measurements and ``--spark-rounds`` more rounds alternating the two, each
    printed with the load."""
    ours, native = [first_ours], [first_native]
    for round_ in range(args.spark_rounds):
        for side in ("spark", "ours") if round_ % 2 == 0 else ("ours", "spark"):
            if side == "spark":
                native.append(_run_query(spark, max(args.rows, 2 * per_batch), per_batch,
                                         False, workdir))  # fmt: skip
            else:
                ours.append(steady_rate(run, args.columnar_rows))
        print(f"  round {round_ + 1}: undertow columnar {ours[-1]:,.0f} rows/s, Spark native "
              f"{native[-1]:,.0f} rows/s (load {_load()})")  # fmt: skip
    return ours, native


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=8_000_000)
    parser.add_argument("--columnar-rows", type=int, default=32_000_000)
    parser.add_argument("--record-rows", type=int, default=4_000_000)
    parser.add_argument("--batch-rows", type=int, default=32768)
    parser.add_argument("--spark-batches", default="1000000,4000000,8000000")
    parser.add_argument("--pandas-rows", type=int, default=2_000_000)
    parser.add_argument("--rounds", type=int, default=3, help="record path against the loop")
    parser.add_argument("--latency-seconds", type=float, default=10.0)
    parser.add_argument("--latency-rounds", type=int, default=3,
                        help="paced latency runs, each after a Spark native round")  # fmt: skip
    parser.add_argument("--latency-warmup-ms", type=float, default=2000.0)
    parser.add_argument("--spark-rounds", type=int, default=2,
                        help="more rounds of columnar and Spark native, alternating")  # fmt: skip
    args = parser.parse_args()
    print(f"load average at start: {_load()} (shared machine: figures move with the load)")
    workdir = tempfile.mkdtemp(prefix="columnar-bench-")
    results: dict[str, float] = {}
    try:
        cols, recs = os.path.join(workdir, "cols"), os.path.join(workdir, "recs")
        results["undertow columnar"] = steady_rate(
            lambda n: undertow_columnar(n, args.batch_rows, cols), args.columnar_rows
        )
        results["undertow columnar, debloating off"] = steady_rate(
            lambda n: undertow_columnar(n, args.batch_rows, cols, debloat=False),
            args.columnar_rows,
        )
        print("record path against the bare loop (job steady state; loop in 1 and 2 processes):")
        record = record_vs_loop.measure(
            args.record_rows, args.rounds, {**CHECKPOINTS, "execution.checkpointing.dir": recs}
        )
        results["undertow per record, p=2"] = record.job_rate
        results["undertow per record, p=2, start included"] = record.run_rate
        results["bare Python loop, 1 process"] = record.loop_rate
        results["bare Python loop, 2 processes"] = record.two_loops_rate
        spark = _spark_session()
        native = {}
        for per_batch in (int(b) for b in args.spark_batches.split(",")):
            rows = max(args.rows, 2 * per_batch)
            native[per_batch] = _run_query(spark, rows, per_batch, False, workdir)
            rate = native[per_batch]
            print(f"  spark native, {per_batch:,} rows per micro-batch: {rate:,.0f} rows/s")
        best = max(native, key=native.__getitem__)
        columnar_job = partial(undertow_columnar, batch_rows=args.batch_rows, checkpoint_dir=cols)
        paired = _paired_rounds(spark, args, best, native[best], results["undertow columnar"],
                                columnar_job, workdir)  # fmt: skip
        results[f"Spark native (best: {best:,} rows/batch)"] = native[best]
        try:
            results["Spark pandas UDF (applyInPandasWithState)"] = _run_query(
                spark, args.pandas_rows, 500_000, True, workdir
            )
        except Exception as err:
            print(f"  Spark pandas UDF not measured: {type(err).__name__}: {err}"[:300])

        def next_spark_rate() -> float:  # a Spark round at its best size, then a paced one
            rate = _run_query(spark, max(args.rows, 2 * best), best, False, workdir)
            print(f"  Spark native before a paced round: {rate:,.0f} rows/s (load {_load()})")
            return rate

        latency_target = columnar_latency.report(
            next_spark_rate, args.latency_rounds, median_high(paired[0]), args.latency_seconds,
            args.latency_warmup_ms, args.batch_rows, workdir, CHECKPOINTS, SPARK_BATCH_MS[best],
        )  # fmt: skip
        spark.stop()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    spark_native = native[best]
    ours_rounds, spark_rounds = paired
    print(f"\n{'engine':<46}{'rows/s':>14}{'vs Spark native':>17}")
    for name, rate in results.items():
        print(f"{name:<46}{rate:>14,.0f}{rate / spark_native:>17.2f}")
    print(f"CPU per row: undertow per record {record.job_cpu_us:.2f} us (every process of "
          f"the job), bare loop {record.loop_cpu_us:.2f} us")  # fmt: skip
    print(record_vs_loop.arithmetic(record, os.cpu_count() or 1))
    print(
        f"record path on 2 cores against two loops (wall clock): {record.wall_ratio:.2f}x; "
        f"CPU per record, loop / job, by round: {record_vs_loop.spread(record.cpu_ratios)}"
    )
    print(f"load average at end: {_load()} (shared machine)")
    print(f"rounds, undertow columnar: {_spread(ours_rounds)}; Spark native "
          f"({best:,} rows/batch): {_spread(spark_rounds)}; undertow / Spark by round: "
          f"{', '.join(f'{o / n:.2f}' for o, n in zip(ours_rounds, spark_rounds))}")  # fmt: skip
    columnar = median_high(ours_rounds) / median_high(spark_rounds)
    print(f"target columnar-vs-spark-native: {columnar:.2f}x, median of {len(ours_rounds)} rounds "
          f"each (goal 1.0x): {'met' if columnar >= 1.0 else 'missed'}")  # fmt: skip
    print(f"target record-path-vs-bare-loop: {record.cpu_ratio:.2f}x CPU per record (goal 0.7x): "
          f"{'met' if record.cpu_ratio >= 0.7 else 'missed'}")  # fmt: skip
    print(latency_target)


if __name__ == "__main__":
    main()
