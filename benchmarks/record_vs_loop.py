"""The record path against a bare Python loop doing the same per-record work (issue 31).

The job is ``benchmarks/throughput.py``'s: ``NumberSequenceSource(1, n) -> map(to_pair) ->
key_by(key_of) -> sum(1) -> DiscardingSink``, parallelism 2 on the ``local`` target (two worker
processes, TCP between them), checkpoints as the caller sets (but no final one:
:data:`NO_FINAL_CHECKPOINT`). The loop does what the job asks of Python per record and nothing
of the engine's: it calls the same ``to_pair`` and ``key_of`` (the user's functions, which the
job must call too), folds the running sum into a dict as ``sum(1)`` does (a new ``(key, total)``
tuple per record, the record the job emits) and hands each result to a sink that keeps the last
4,096 (the discarding sink does less).

Two ratios, each over the same rows:

- **CPU per record** (the target): the loop's CPU seconds per record over the job's, where the
  job's are those of every process of the driver's tree (the driver with its coordinator, the
  fork server, the workers it forked and reaped: :class:`process_cpu.CpuGroups` with
  ``reaped=True``). It compares the work each side does for a record, whatever the number of
  cores. It is not free of the load: on a shared machine other processes evict both sides'
  caches, so the same code's CPU per record moves (the loop's 0.31-0.56 us, the job's 0.90-2.05
  us between phases of one afternoon, docs/performance.md), which is why each round brackets
  its job with a loop run just before and one just after and divides by their mean;
- **wall clock on 2 cores**: the job's rows/s against the loop's in two processes at once, each
  over half of the rows (the job has two cores' worth of workers). It moves with the load.

The job's figures are steady-state (:func:`steady`): the difference of a run of all rows and one
of an eighth cancels the job's start (4 M rows by default: the start varies by a second on a
loaded machine, which a shorter run cannot absorb). A ratio is the median of the rounds'
ratios, printed with each round's and their range: on a loaded machine one round is no result.

The two differences are not equally sound. CPU seconds of the job's start vary little, so the
steady CPU per record holds to a few percent; wall seconds of a short run vary by a large
share of the steady wall time, so the steady rows/s can be far off (in one run of five rounds
the implied cores below ranged 0.67-2.33, docs/performance.md). Each round prints the cores
the two differences imply (CPU over wall): a round above the machine's cores is impossible, its
rows/s (and the wall-clock ratio) is noise, and only the CPU figures stand. The rows/s of the
long run itself (start included, a lower bound) is printed beside it. The driver's own CPU
(the job master and checkpoint coordinator are threads of this process) is split out per
record: what the non-worker processes cost.
Usage::

    python benchmarks/record_vs_loop.py [--rows N] [--rounds R]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import process_cpu
import throughput
from throughput import NO_FINAL_CHECKPOINT, key_of, to_pair

#: The loop's sink keeps this many results (the job's buffers hold about as many records).
SINK_ROWS = 4096


def loop(first: int, last: int) -> dict[int, tuple[int, int]]:
    """The job's per-record work on numbers ``first..last``, in this process; the sums."""
    sums: dict[int, tuple[int, int]] = {}
    out: list[tuple[int, int]] = []
    for x in range(first, last + 1):
        t = to_pair(x)
        key = key_of(t)
        old = sums.get(key)
        new = t if old is None else (old[0], old[1] + t[1])
        sums[key] = new
        out.append(new)
        if len(out) >= SINK_ROWS:
            out = []
    return sums


@dataclass(frozen=True)
class Sample:
    """One measurement: wall seconds and CPU seconds for ``rows`` rows; ``driver_cpu_s``: the
    part of ``cpu_s`` this process's own threads ran (the driver with the job master and the
    checkpoint coordinator, none of the workers)."""

    rows: int
    wall_s: float
    cpu_s: float
    driver_cpu_s: float = 0.0

    @property
    def cores(self) -> float:
        """CPU seconds per wall second: above the machine's cores, the wall figure is wrong."""
        return self.cpu_s / self.wall_s if self.wall_s > 0 else float("inf")


def _tree_cpu() -> float:
    return process_cpu.CpuGroups({"tree": [os.getpid()]}, reaped=True).read()["tree"]


def _settle(timeout: float = 10.0) -> None:
    """Wait until no grandchild of this process is left (the job's workers, reaped by the fork
    server: only then is their CPU time in the tree's reading)."""
    deadline = time.monotonic() + timeout
    me = os.getpid()
    while time.monotonic() < deadline:
        table = process_cpu._table()
        children = {pid for pid, (parent, _) in table.items() if parent == me}
        if not any(parent in children for parent, _ in table.values()):
            return
        time.sleep(0.02)


def _own_cpu() -> float:
    """CPU seconds of this process's threads (not of its children)."""
    times = os.times()
    return times.user + times.system


def job_sample(rows: int, settings: dict[str, str]) -> Sample:
    """One run of the job over ``rows`` numbers, p=2, ``local`` target, ending without a
    final checkpoint (:data:`NO_FINAL_CHECKPOINT`)."""
    _settle()
    cpu, own = _tree_cpu(), _own_cpu()
    wall = throughput.run_job(rows, 2, "local", {**settings, **NO_FINAL_CHECKPOINT})
    own = _own_cpu() - own
    _settle()
    return Sample(rows, wall, _tree_cpu() - cpu, own)


def steady(run: Callable[[int], Sample], rows: int) -> Sample:
    """The job's steady state: a run of ``rows`` minus one of ``rows // 8``, so what a run pays
    once (deploying tasks, starting workers, the last checkpoint) cancels out."""
    return steady_runs(run, rows)[0]


def steady_runs(run: Callable[[int], Sample], rows: int) -> tuple[Sample, Sample]:
    """:func:`steady`, and the run of all ``rows`` itself (its start included)."""
    small = max(1, rows // 8)
    a, b = run(small), run(rows)
    difference = Sample(rows - small, b.wall_s - a.wall_s, b.cpu_s - a.cpu_s,
                        b.driver_cpu_s - a.driver_cpu_s)  # fmt: skip
    return difference, b


def loop_sample(rows: int) -> Sample:
    """The loop over ``rows`` numbers in this process (one thread: process CPU is its CPU)."""
    wall, cpu = time.perf_counter(), time.process_time()
    loop(1, rows)
    return Sample(rows, time.perf_counter() - wall, time.process_time() - cpu)


def two_loops_wall(rows: int) -> float:
    """Seconds for two processes (forked, started together) to each loop over half the rows."""
    half = rows // 2
    context = multiprocessing.get_context("fork")
    procs = [context.Process(target=loop, args=(1 + i * half, (i + 1) * half)) for i in (0, 1)]
    start = time.perf_counter()
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join()
    return time.perf_counter() - start


@dataclass(frozen=True)
class Figures:
    """Medians over the rounds; the ratios are each round's (its job against its loops, which
    ran next to each other: a slower phase of a shared machine moves both), then the median."""

    job_rate: float  # rows/s, steady state, p=2
    job_cpu_us: float  # CPU microseconds per record, all of the job's processes
    loop_rate: float  # rows/s, one process
    loop_cpu_us: float
    two_loops_rate: float  # rows/s, two processes at once
    cpu_ratios: tuple[float, ...]  # per round: loop's CPU per record / the job's
    wall_ratios: tuple[float, ...]  # per round: job's rows/s / two loops' rows/s
    job_cores: tuple[float, ...] = ()  # per round: steady CPU seconds / steady wall seconds
    run_rate: float = 0.0  # rows/s of the long run, its start included (a lower bound)
    driver_cpu_us: float = 0.0  # the driver's own CPU per record, steady (in job_cpu_us)

    def impossible_rounds(self, cores: int) -> list[int]:
        """The rounds whose steady figures imply more than ``cores`` busy cores: their wall
        difference (rows/s, wall ratio) is noise; their CPU per record stands."""
        return [i for i, used in enumerate(self.job_cores) if used > cores]

    @property
    def cpu_ratio(self) -> float:
        return statistics.median(self.cpu_ratios)

    @property
    def wall_ratio(self) -> float:
        return statistics.median(self.wall_ratios)


def bracket(before: Sample, after: Sample) -> Sample:
    """The loop's runs just before and just after a job as one sample (their sums), so that
    the loop's CPU per record is the mean over the phase of the machine the job ran in."""
    return Sample(
        before.rows + after.rows, before.wall_s + after.wall_s, before.cpu_s + after.cpu_s
    )


def measure(rows: int, rounds: int, settings: dict[str, str], verbose: bool = True) -> Figures:
    """``rounds`` rounds, each: the loop, the job (steady), the loop again, two loops at once."""
    throughput.run_job(throughput.FIRST_JOB_RECORDS, 2, "local", settings)  # the fork server
    jobs: list[Sample] = []
    longs: list[Sample] = []
    loops: list[Sample] = []
    pairs: list[float] = []
    for round_ in range(rounds):
        first = loop_sample(rows)
        job, long_run = steady_runs(lambda n: job_sample(n, settings), rows)
        jobs.append(job)
        longs.append(long_run)
        loops.append(bracket(first, loop_sample(rows)))
        pairs.append(rows / two_loops_wall(rows))
        if verbose:
            job, one = jobs[-1], loops[-1]
            print(
                f"  round {round_}: job {job.rows / job.wall_s:>10,.0f} rows/s "
                f"{job.cpu_s / job.rows * 1e6:5.2f} us CPU/row; loop "
                f"{one.rows / one.wall_s:>10,.0f} rows/s {one.cpu_s / one.rows * 1e6:5.2f} us "
                f"CPU/row; two loops {pairs[-1]:>10,.0f} rows/s; job's steady figures imply "
                f"{job.cores:.2f} cores; load {os.getloadavg()[0]:.1f}",
                flush=True,
            )
    med = statistics.median
    return Figures(
        job_rate=med(s.rows / s.wall_s for s in jobs),
        job_cpu_us=med(s.cpu_s / s.rows * 1e6 for s in jobs),
        loop_rate=med(s.rows / s.wall_s for s in loops),
        loop_cpu_us=med(s.cpu_s / s.rows * 1e6 for s in loops),
        two_loops_rate=med(pairs),
        cpu_ratios=tuple(
            (one.cpu_s / one.rows) / (job.cpu_s / job.rows) for job, one in zip(jobs, loops)
        ),
        wall_ratios=tuple(job.rows / job.wall_s / pair for job, pair in zip(jobs, pairs)),
        job_cores=tuple(job.cores for job in jobs),
        run_rate=med(s.rows / s.wall_s for s in longs),
        driver_cpu_us=med(s.driver_cpu_s / s.rows * 1e6 for s in jobs),
    )


def spread(ratios: tuple[float, ...]) -> str:
    return ", ".join(f"{r:.2f}" for r in ratios)


def arithmetic(figures: Figures, cores: int) -> str:
    """The cores each round's steady figures imply, and which rounds' rows/s cannot be."""
    text = f"steady CPU / steady wall by round: {spread(figures.job_cores)} cores"
    bad = figures.impossible_rounds(cores)
    if bad:
        rounds = ", ".join(map(str, bad))
        text += (f"; round(s) {rounds} above this machine's {cores} cores: their rows/s and "
                 f"wall-clock ratio are noise, their CPU per record stands")  # fmt: skip
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=4_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--checkpoint-interval", default="1 s")
    args = parser.parse_args()
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory(prefix="record-vs-loop-") as workdir:
        settings = {"execution.checkpointing.interval": args.checkpoint_interval,
                    "execution.checkpointing.dir": workdir}  # fmt: skip
        figures = measure(args.rows, args.rounds, settings)
    print(f"{'side':<40}{'rows/s':>12}{'us CPU/row':>12}")
    print(f"{'undertow per record, p=2 (steady)':<40}{figures.job_rate:>12,.0f}"
          f"{figures.job_cpu_us:>12.2f}")  # fmt: skip
    print(f"{'bare loop, 1 process':<40}{figures.loop_rate:>12,.0f}{figures.loop_cpu_us:>12.2f}")
    print(f"{'undertow per record, p=2 (start included)':<40}{figures.run_rate:>12,.0f}")
    print(f"{'bare loop, 2 processes':<40}{figures.two_loops_rate:>12,.0f}")
    print(f"the driver's own threads (job master, coordinator): {figures.driver_cpu_us:.3f} us "
          f"CPU/row of the job's {figures.job_cpu_us:.2f}")  # fmt: skip
    print(arithmetic(figures, os.cpu_count() or 1))
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"wall clock on 2 cores (job / two loops): {figures.wall_ratio:.2f}x, rounds "
          f"{spread(figures.wall_ratios)}")  # fmt: skip
    print(f"CPU per record (loop / job): rounds {spread(figures.cpu_ratios)}; range "
          f"{min(figures.cpu_ratios):.2f}-{max(figures.cpu_ratios):.2f}x")  # fmt: skip
    verdict = "met" if figures.cpu_ratio >= 0.7 else "missed"
    print(f"target record-path-vs-bare-loop: {figures.cpu_ratio:.2f}x CPU per record "
          f"(goal 0.7x): {verdict}")  # fmt: skip


if __name__ == "__main__":
    main()
