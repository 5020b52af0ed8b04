"""Throughput of source -> map -> key_by -> sum -> discarding sink, in records per second.

Prints a table for parallelism 1 and 2 on the ``local`` target (worker processes, TCP), and
the ratio against a baseline measured in the same run: the same work as a plain Python loop
in one process (no engine, no serialization, no network). A driver's first job starts the
``local`` target's fork server (its imports, about a second on 2 cores); that start is timed
on its own with a small first job, so the table's jobs measure the engine, as later jobs and
restarts of the same driver see it. ``--cold`` leaves the first job out (each row then
includes what was not started yet). Usage::

    python benchmarks/throughput.py [--records N] [--target local|local-threads] [--cold]
"""

from __future__ import annotations

import argparse
import time

from undertow.common import Configuration, WatermarkStrategy
from undertow.datastream import StreamExecutionEnvironment
from undertow.datastream.connectors import DiscardingSink, NumberSequenceSource

#: The small first job that starts what a driver starts once (the fork server, imports).
FIRST_JOB_RECORDS = 100_000


def to_pair(x: int) -> tuple[int, int]:
    """The job's map function (benchmarks/record_vs_loop.py's loop calls it too)."""
    return (x % 1000, 1)


#: Set on the benchmarks' timed bounded runs: with checkpoints on, a bounded job's tasks would
#: wait for a final checkpoint (FLIP-147) at the next periodic trigger, idle for up to an
#: interval (500 k rows, 5 s interval: 1.2-5.6 s of wall clock for the same 0.5 s of CPU,
#: docs/performance.md); the difference of two runs does not cancel that wait, which made
#: steady rows/s times CPU per record come to more than the machine's 2 cores. The checkpoints
#: while the job runs stay.
NO_FINAL_CHECKPOINT = {"execution.checkpointing.checkpoints-after-tasks-finish": "false"}


def key_of(t: tuple[int, int]) -> int:
    """The job's key selector."""
    return t[0]


def run_job(
    records: int, parallelism: int, target: str, settings: dict[str, str] | None = None
) -> float:
    """Seconds to run the pipeline; ``settings`` go on top (benchmarks/debloat.py uses it)."""
    env = StreamExecutionEnvironment.get_execution_environment(
        Configuration({"execution.target": target, "rest.port": "-1", **(settings or {})})
    )
    env.set_parallelism(parallelism)
    (
        env.from_source(NumberSequenceSource(1, records), WatermarkStrategy.no_watermarks(), "seq")
        .map(to_pair)
        .key_by(key_of)
        .sum(1)
        .sink_to(DiscardingSink())
    )
    start = time.perf_counter()
    env.execute(f"throughput p={parallelism}")
    return time.perf_counter() - start


def baseline(records: int) -> float:
    start = time.perf_counter()
    sums: dict[int, tuple[int, int]] = {}
    out = []
    for x in range(1, records + 1):
        t = (x % 1000, 1)
        old = sums.get(t[0])
        new = t if old is None else (old[0], old[1] + t[1])
        sums[t[0]] = new
        out.append(new)
        if len(out) >= 4096:
            out = []
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=4_000_000)
    parser.add_argument("--target", default="local")
    parser.add_argument("--cold", action="store_true", help="no first job before the table")
    args = parser.parse_args()
    if not args.cold:
        first = run_job(FIRST_JOB_RECORDS, 1, args.target)
        print(f"first job of the driver ({FIRST_JOB_RECORDS:,} records, p=1, {args.target}): "
              f"{first:.2f} s, start included")  # fmt: skip
    base = args.records / baseline(args.records)
    print(f"{'run':<34}{'records/s':>14}{'vs plain loop':>15}")
    print(f"{'plain Python loop, 1 process':<34}{base:>14,.0f}{1.0:>15.2f}")
    for parallelism in (1, 2):
        seconds = run_job(args.records, parallelism, args.target)
        rate = args.records / seconds
        label = f"undertow {args.target} p={parallelism}"
        print(f"{label:<34}{rate:>14,.0f}{rate / base:>15.2f}")


if __name__ == "__main__":
    main()
