"""Per-row latency of benchmarks/columnar.py's keyed running sum (issue 31's first target).

The job is the running sum's (``i -> (i % 1000, 1) -> key by -> sum -> sink``, parallelism 2,
checkpoints every second, ``local`` target, 1 MiB buffers) with two additions:

- at the source, :class:`PacedStamps` (chained to it, ``map_batches``) gives each batch a
  ``created`` column, its creation time, and ``with_event_time("created")`` stamps the batch
  with it (a batch's timestamp travels with it through the keyed sum, and the sum's output
  batches keep the timestamp of their input batch). Paced at ``rate`` rows/s (over all
  subtasks), :class:`PacedBatchSource`'s readers hand out batches at that pace, and a batch is
  due ``rows before it / (rate / parallelism)`` after the subtask's first batch; it is stamped
  with the earlier of that instant and now, so a source that falls behind its pace counts its
  lag as latency (no coordinated omission). Unpaced (``rate`` None: saturation), the stamp is
  the time the batch was made;
- :class:`LatencySink` computes, per output batch, ``arrival - stamp`` (one clock read and one
  subtraction a batch: every row of a batch shares its stamp) and keeps ``(stamp, latency,
  rows)``; each writer saves them to a file at close, read back by the driver.

:func:`row_percentiles` gives p50/p99 over rows after a warm-up (rows created in the first
``warmup_ms`` after the job's first stamp are left out). Stamps are whole milliseconds (the
event-time column's unit), so a latency reads up to 1 ms high. Used by
benchmarks/columnar.py's ``main``: paced at the Spark native rate it measured in the same run,
and at saturation.

Each run is watched (:func:`observe`): the seconds its processes ran and waited on a run queue
(:class:`process_cpu.RunQueueWait`, sampled every 0.1 s) and the JobMaster's console lines with
the time each came, so :func:`timeline` can print, per stretch of the run, the rows that reached
the sink, their worst latency, the cores the job ran and waited for, and the checkpoints that
completed: a slow run says whether it was short of CPU or stalled in a checkpoint.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from undertow.common import Configuration
from undertow.connectors.sink import Sink, SinkWriter, SinkWriterContext
from undertow.connectors.source import IteratorSourceReader, SourceReader, SourceReaderContext
from undertow.datastream import StreamExecutionEnvironment
from undertow.datastream.connectors.number_seq import NumberSequenceSplit
from undertow.datastream.connectors.number_seq_batches import NumberSequenceBatchSource

sys.path.insert(0, str(Path(__file__).resolve().parent))
import process_cpu
from percentiles import weighted_percentiles

PARALLELISM = 2


class PacedStamps:
    """``map_batches``: ``value`` -> ``k = value % 1000``, ``v = 1``, ``created`` (ms since
    the epoch, int64). One instance per subtask (each task unpickles its own); not
    checkpointed (the benchmark restores nothing). ``rate`` is this subtask's rows/s, or None.
    """

    def __init__(self, rate: float | None) -> None:
        self.rate = rate
        self.first: float | None = None
        self.seen = 0

    def due(self, now: float) -> float:
        """The creation time (s) of the next batch: ``now`` unpaced; paced, the instant its
        rows are due at ``rate`` from the first batch, whether that is past or not."""
        if self.rate is None:
            return now
        if self.first is None:
            self.first = now
        return self.first + self.seen / self.rate

    def map_batches(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        now = time.time()
        created = min(now, self.due(now))  # early (the reader's own pace): made now
        self.seen += batch.num_rows
        n = batch.num_rows
        value = batch.column(0).to_numpy()
        return pa.RecordBatch.from_arrays(
            [pa.array(value % 1000), pa.array(np.ones(n, dtype=np.int64)),
             pa.array(np.full(n, int(created * 1000), dtype=np.int64))],
            names=["k", "v", "created"],
        )  # fmt: skip


class PacedBatchSource(NumberSequenceBatchSource):
    """``NumberSequenceBatchSource`` whose readers each hand out at most ``batches_per_second``
    batches a second: the pace is kept by the reader (over the rate it answers that nothing is
    available, and the task waits, serves its mailbox and flushes), not by sleeping in the
    chain, which held the source task and its barriers (alignment took ~340 ms a checkpoint
    paced that way, ~75 ms unpaced)."""

    def __init__(self, end: int, batch_rows: int, batches_per_second: float) -> None:
        super().__init__(0, end, batch_rows=batch_rows)
        self.batches_per_second = batches_per_second

    def create_reader(self, context: SourceReaderContext) -> SourceReader[NumberSequenceSplit]:
        return IteratorSourceReader(context, batch_size=1,
                                    records_per_second=self.batches_per_second)  # fmt: skip


class _LatencyWriter(SinkWriter):
    """Keeps ``(stamp ms, latency ms, rows)`` per batch; saves them to ``directory`` at close.
    Task thread only."""

    def __init__(self, directory: str, subtask: int) -> None:
        self.path = os.path.join(directory, f"latency-{subtask}-{uuid.uuid4().hex}.npy")
        self.stamps: list[int] = []
        self.latencies: list[float] = []
        self.rows: list[int] = []

    def write(self, element: Any, timestamp: int | None) -> None:
        self.write_batch([element], [timestamp])

    def write_batch(self, elements: list[Any], timestamps: list[Any] | None) -> None:
        if timestamps is None:
            raise ValueError("LatencySink: batches without a timestamp (with_event_time "
                             "upstream stamps them)")  # fmt: skip
        now = time.time() * 1000.0
        for batch, stamp in zip(elements, timestamps):
            self.stamps.append(stamp)
            self.latencies.append(now - stamp)
            self.rows.append(batch.num_rows)

    def close(self) -> None:
        table = np.array([self.stamps, self.latencies, self.rows], dtype=np.float64)
        np.save(self.path, table)


class LatencySink(Sink):
    """A no-op sink that measures each batch's latency (see :class:`_LatencyWriter`)."""

    def __init__(self, directory: str) -> None:
        self.directory = directory

    def create_writer(self, context: SinkWriterContext) -> SinkWriter:
        return _LatencyWriter(self.directory, context.subtask_index())


class WithinWarmup(ValueError):
    """A run ended within its warm-up: no batch left to measure (:func:`past_warmup`)."""


def past_warmup(run: Callable[[int], Any], rows: int, tries: int = 5) -> tuple[Any, int]:
    """``(run(n), n)`` for the first ``n`` of ``rows``, ``2 * rows``, ... (``tries`` of them)
    whose run outlasts its warm-up: an unpaced job on a quiet machine can end within it."""
    for _ in range(tries - 1):
        try:
            return run(rows), rows
        except WithinWarmup:
            rows *= 2
    return run(rows), rows


def row_percentiles(
    stamps: np.ndarray, latencies: np.ndarray, rows: np.ndarray, warmup_ms: float,
    quantiles: tuple[float, ...] = (0.5, 0.99),
) -> tuple[list[float], int]:  # fmt: skip
    """``(latency at each quantile over rows, rows counted)``: each batch's latency counts
    once per row of it; batches stamped before ``min(stamps) + warmup_ms`` are left out.
    A quantile ``q`` is the smallest latency with at least ``q`` of the rows at or below it
    (``percentiles.py``'s nearest rank, weighted)."""
    if not len(stamps):
        raise ValueError("no batch reached the latency sink")
    kept = stamps >= stamps.min() + warmup_ms
    if not kept.any():
        raise WithinWarmup(f"every batch came within the {warmup_ms} ms warm-up")
    picks = weighted_percentiles(latencies[kept], rows[kept], quantiles)
    return picks, int(rows[kept].sum())


def sink_rate(stamps: np.ndarray, latencies: np.ndarray, rows: np.ndarray) -> float:
    """Rows/s from the first row's creation to the last row's arrival at the sink (the job's
    start before its first row does not count)."""
    span_ms = float((stamps + latencies).max() - stamps.min())
    return float(rows.sum()) / max(span_ms / 1000.0, 1e-9)


def read_latencies(directory: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The writers' ``(stamps, latencies, rows)``, concatenated."""
    tables = [np.load(p) for p in sorted(Path(directory).glob("latency-*.npy"))]
    if not tables:
        raise ValueError(f"no latency file in {directory}: did the sink's writers close?")
    joined = np.concatenate(tables, axis=1)
    return joined[0], joined[1], joined[2]


def run(rows: int, batch_rows: int, rate: float | None, checkpoint_dir: str,
        out_dir: str, checkpoints: dict[str, str]) -> float:  # fmt: skip
    """Seconds to run the stamped running sum over ``rows`` numbers, paced at ``rate``
    rows/s over the job (None: as fast as it goes); the sink's files go to ``out_dir``."""
    env = StreamExecutionEnvironment.get_execution_environment(Configuration({
        "execution.target": "local", "rest.port": "-1", **checkpoints,
        "execution.checkpointing.dir": checkpoint_dir,
        "taskmanager.memory.segment-size": "1 mb",
    }))  # fmt: skip
    env.set_parallelism(PARALLELISM)
    per_subtask = None if rate is None else rate / PARALLELISM
    source = (NumberSequenceBatchSource(0, rows - 1, batch_rows=batch_rows) if per_subtask is None
              else PacedBatchSource(rows - 1, batch_rows, per_subtask / batch_rows))  # fmt: skip
    (
        env.from_source(source, None, "numbers")
        .as_batches()  # type: ignore[arg-type]
        .map_batches(PacedStamps(per_subtask))
        .with_event_time("created")
        .key_by("k")
        .sum("v")
        .sink_to(LatencySink(out_dir))
    )
    start = time.perf_counter()
    env.execute("columnar running sum, latency")
    return time.perf_counter() - start


class TimedConsole(io.TextIOBase):
    """Stands in for ``sys.stderr`` during a run: keeps the JobMaster's console lines, each with
    the wall-clock time (ms since the epoch) its end was written. One writer thread."""

    def __init__(self) -> None:
        self.lines: list[tuple[float, str]] = []
        self._partial = ""

    def write(self, text: str) -> int:
        self._partial += text
        *done, self._partial = self._partial.split("\n")
        now = time.time() * 1000.0
        self.lines.extend((now, line) for line in done)
        return len(text)


@dataclass(frozen=True, slots=True)
class Observed:
    """One run: per batch at the sink ``stamps``, ``latencies`` (ms) and ``rows``; the CPU
    readings of the job's processes (:attr:`process_cpu.RunQueueWait.samples`) and the console
    lines with their times (:class:`TimedConsole`); the other weighted cgroups busy meanwhile
    (:func:`process_cpu.weighted_neighbours`)."""

    stamps: np.ndarray
    latencies: np.ndarray
    rows: np.ndarray
    cpu: list[tuple[float, float, float]]
    console: list[tuple[float, str]]
    seconds: float
    neighbours: frozenset[str] = frozenset()


def observe(rows: int, batch_rows: int, rate: float | None, workdir: str,
            checkpoints: dict[str, str]) -> Observed:  # fmt: skip
    """Run the job (:func:`run`) once, watching its processes' CPU and its console."""
    out = os.path.join(workdir, f"latency-{uuid.uuid4().hex[:8]}")
    os.makedirs(out)
    console, saved = TimedConsole(), sys.stderr
    with process_cpu.RunQueueWait(os.getpid(), period=0.1) as cpu:
        sys.stderr = console
        try:
            seconds = run(rows, batch_rows, rate, os.path.join(workdir, "latency-cp"), out,
                          checkpoints)  # fmt: skip
        finally:
            sys.stderr = saved
    return Observed(*read_latencies(out), cpu.samples, console.lines, seconds,
                    frozenset(cpu.neighbours))  # fmt: skip


def _cores(cpu: np.ndarray, begin: float, end: float) -> tuple[float, float]:
    """Cores run and waited between the last CPU sample before ``begin`` (else the first at or
    after it) and the last before ``end``; samples are rows ``(ms, run s, waited s)``."""
    inside = cpu[(cpu[:, 0] >= begin) & (cpu[:, 0] < end)]
    if not len(inside):
        return 0.0, 0.0
    earlier = cpu[cpu[:, 0] < begin]
    base = earlier[-1] if len(earlier) else inside[0]
    span_s = (inside[-1, 0] - base[0]) / 1000.0
    if span_s <= 0:
        return 0.0, 0.0
    ran, waited = (inside[-1, 1:] - base[1:]) / span_s
    return float(ran), float(waited)


def timeline(run: Observed, step_ms: float = 1000.0) -> list[str]:
    """One line per ``step_ms`` of wall-clock time from a step before the first row's creation
    to the last row's arrival: the rows that arrived at the sink then (rows/s), the largest and
    smallest latency among them, the cores the job's processes ran and waited for on a run
    queue (:func:`_cores`: the CPU samples' difference over the time between them), and the
    checkpoints completed in it (their console line, shortened)."""
    start = float(run.stamps.min())
    arrivals = run.stamps + run.latencies
    cpu = np.array(run.cpu, dtype=np.float64).reshape(-1, 3)
    cpu[:, 0] *= 1000.0
    lines = []
    for begin in np.arange(start - step_ms, float(arrivals.max()) + 1e-9, step_ms):
        end = begin + step_ms
        came = (arrivals >= begin) & (arrivals < end)
        rate = float(run.rows[came].sum()) / (step_ms / 1000.0)
        latency = (f"latency {run.latencies[came].min():7.0f}-{run.latencies[came].max():7.0f}"
                   if came.any() else f"latency {'-':>7} {'-':>7}")  # fmt: skip
        ran, waited = _cores(cpu, begin, end)
        done = [
            line.split("checkpoint ", 1)[1].split(" (")[0]
            for at, line in run.console
            if begin <= at < end and " completed in " in line
        ]
        lines.append(f"{(begin - start) / 1000:6.1f} s  {rate / 1e6:6.2f} M rows/s  {latency} ms"
                     f"  cores ran {ran:4.2f} waited {waited:5.2f}  {'; '.join(done)}")  # fmt: skip
    return lines


def measure(
    rows: int, batch_rows: int, rate: float | None, workdir: str,
    checkpoints: dict[str, str], warmup_ms: float,
) -> tuple[list[float], int, float]:  # fmt: skip
    """``([p50, p99] ms, rows counted, rows/s at the sink (:func:`sink_rate`))`` of one run."""
    seen = observe(rows, batch_rows, rate, workdir, checkpoints)
    picks, counted = row_percentiles(seen.stamps, seen.latencies, seen.rows, warmup_ms)
    return picks, counted, sink_rate(seen.stamps, seen.latencies, seen.rows)


def summary(seen: Observed, warmup_ms: float) -> tuple[float, float, int, float, str]:
    """``(p50, p99, rows counted, sink rows/s, CPU)`` of a run; CPU reads ``ran X waited Y
    cores``, the job's processes' run and run-queue wait over the run's length."""
    (p50, p99), counted = row_percentiles(seen.stamps, seen.latencies, seen.rows, warmup_ms)
    ran, waited = seen.cpu[-1][1:] if seen.cpu else (0.0, 0.0)
    cores = process_cpu.cores(ran, waited, seen.seconds, seen.neighbours)
    return p50, p99, counted, sink_rate(seen.stamps, seen.latencies, seen.rows), cores


def judge(p99s: list[float], goal_ms: float = 100.0) -> tuple[float, bool]:
    """``(median p99, met)`` over the paced rounds: the middle round's p99 (the upper middle
    of an even count) against ``goal_ms``, as the throughput target judges medians of rounds."""
    if not p99s:
        raise ValueError("no paced round to judge")
    median = sorted(p99s)[len(p99s) // 2]
    return median, median <= goal_ms


def report(
    next_spark_rate: Callable[[], float], rounds: int, columnar_rate: float, seconds: float,
    warmup_ms: float, batch_rows: int, workdir: str, checkpoints: dict[str, str],
    spark_batch_ms: list[int],
) -> str:  # fmt: skip
    """Runs the job ``rounds`` times paced at Spark native's rate, each round at the rate of
    a Spark round run just before it (``next_spark_rate``), then once at saturation (sized to
    run about ``seconds`` at ``columnar_rate``); prints each run's p50/p99, the job's cores
    and the load, Spark's micro-batch durations and the timeline of the paced round with the
    worst p99, and returns the target line: the median of the paced rounds' p99 (:func:`judge`).
    """
    paced: list[tuple[float, Observed, str]] = []
    for _ in range(rounds):
        rate = next_spark_rate()
        paced.append((rate, observe(int(rate * seconds), batch_rows, rate, workdir, checkpoints),
                      " ".join(f"{x:.1f}" for x in os.getloadavg())))  # fmt: skip
    saturated = observe(int(columnar_rate * seconds), batch_rows, None, workdir, checkpoints)
    print(f"\nper-row latency of the columnar running sum (checkpoints every 1 s, "
          f"{batch_rows:,}-row batches, after a {warmup_ms / 1000:.0f} s warm-up)")  # fmt: skip
    print(f"{'run':<34}{'sink rows/s':>13}{'p50 ms':>9}{'p99 ms':>9}  job's CPU, load at end")
    p99s = []
    for number, (rate, seen, load) in enumerate(paced, 1):
        p50, p99, _, sink, cores = summary(seen, warmup_ms)
        p99s.append(p99)
        name = f"paced {number}, at Spark's {rate / 1e6:.2f} M"
        print(f"{name:<34}{sink:>13,.0f}{p50:>9.1f}{p99:>9.1f}  {cores}, {load}")
    p50, p99, _, sink, cores = summary(saturated, warmup_ms)
    print(f"{'saturated (unpaced)':<34}{sink:>13,.0f}{p50:>9.1f}{p99:>9.1f}  {cores}")
    ordered = sorted(spark_batch_ms)
    median = ordered[len(ordered) // 2] if ordered else float("nan")
    print(f"Spark native micro-batches (a row waits for its whole micro-batch): {spark_batch_ms}"
          f" ms, median {median} ms")  # fmt: skip
    worst = max(range(len(paced)), key=p99s.__getitem__)
    print(f"timeline of paced round {worst + 1} (the worst p99), by arrival at the sink:")
    print("\n".join(timeline(paced[worst][1])))
    p99, met = judge(p99s)
    return (f"target columnar-latency-p99-at-spark-rate: {p99:.1f} ms, median of {len(p99s)} "
            f"paced rounds ({', '.join(f'{x:.1f}' for x in p99s)} ms) at Spark native's rate "
            f"of the round before each (goal <= 100 ms): {'met' if met else 'missed'}")  # fmt: skip


def main() -> None:
    """One paced run alone, with its timeline: ``python benchmarks/columnar_latency.py --rate
    6000000 [--seconds 10] [--warmup-ms 2000] [--batch-rows 32768] [--checkpoint-interval
    '1 s'|off] [--step-ms 1000] [--conf KEY=VALUE ...]``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, required=True, help="rows/s over the job")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--warmup-ms", type=float, default=2000.0)
    parser.add_argument("--batch-rows", type=int, default=32768)
    parser.add_argument("--checkpoint-interval", default="1 s",
                        help="execution.checkpointing.interval, or 'off' for none")  # fmt: skip
    parser.add_argument("--step-ms", type=float, default=1000.0, help="the timeline's step")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="one more configuration option of the job (repeatable)")  # fmt: skip
    args = parser.parse_args()
    off = args.checkpoint_interval == "off"
    checkpoints = {} if off else {"execution.checkpointing.interval": args.checkpoint_interval}
    checkpoints.update(dict(option.split("=", 1) for option in args.conf))
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory() as workdir:
        seen = observe(int(args.rate * args.seconds), args.batch_rows, args.rate, workdir,
                       checkpoints)  # fmt: skip
    print("\n".join(timeline(seen, args.step_ms)))
    p50, p99, counted, rate, cores = summary(seen, args.warmup_ms)
    print(f"sink {rate:,.0f} rows/s, p50 {p50:.1f} ms, p99 {p99:.1f} ms over {counted:,} rows; "
          f"job's CPU {cores}; load average at end: "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")  # fmt: skip
    print(f"target columnar-latency-p99: {p99:.1f} ms at {args.rate:,.0f} rows/s "
          f"(goal <= 100 ms): {'met' if p99 <= 100 else 'missed'}")  # fmt: skip


if __name__ == "__main__":
    main()
