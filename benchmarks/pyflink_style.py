"""Jobs written as PyFlink users write them, on two builds of undertow in the same run.

The record path's other benchmarks keep records as int pairs. Ported PyFlink jobs carry named
``Row`` records, read fields by attribute in every function and key by a lambda over a field;
three such jobs, p=2 on the ``local`` target, checkpoints every second:

- ``reduce``: ``map -> Row(user, amount, ts) -> key_by(r.user) -> reduce`` (a new row per
  record);
- ``window``: the same rows with event time from ``ts`` -> a 10 s tumbling event-time window
  with an ``AggregateFunction`` (a mean of ``amount``);
- ``window-process``: the same window with a ``ProcessWindowFunction`` that counts the
  window's elements (the window buffers every row in list state until it fires);
- ``timers``: a ``KeyedProcessFunction`` that counts per key in ``ValueState`` (a row) and
  registers an event-time timer per record, as Flink's ``CountWithTimeoutFunction``.

Each job's rows/s is steady-state (the difference of a run of all rows and one of an eighth).
``--before PYTHON`` names the interpreter of another build (for instance a commit's venv under
``.bench/commits/`` made by ``compare_commits.py``); the two sides alternate per round and the
medians, after/before ratios and ``no worse`` targets are printed (``ab_sides.py``).
``--weighted`` runs each side in a cgroup of the highest CPU weight, as ``compare_commits.py
--weighted``. Usage::

    python benchmarks/pyflink_style.py [--rows N] [--rounds R] [--before PYTHON] [--weighted]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ab_sides

JOBS = ("reduce", "window", "window-process", "timers")
#: With --before: each job's rows/s at least this fraction of the other build's.
GOAL_NO_WORSE = 0.95


def window_functions() -> tuple[Any, Any]:
    """The window jobs' functions: an ``AggregateFunction`` (a mean of ``amount``) and a
    ``ProcessWindowFunction`` counting the pane (imports undertow here: the child's build)."""
    from undertow.datastream.functions import AggregateFunction, ProcessWindowFunction

    class Mean(AggregateFunction):
        def create_accumulator(self) -> tuple[int, int]:
            return (0, 0)

        def add(self, value: Any, accumulator: tuple[int, int]) -> tuple[int, int]:
            return (accumulator[0] + value.amount, accumulator[1] + 1)

        def get_result(self, accumulator: tuple[int, int]) -> float:
            return accumulator[0] / accumulator[1]

        def merge(self, a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
            return (a[0] + b[0], a[1] + b[1])

    class Count(ProcessWindowFunction):
        def process(self, key: Any, context: Any, elements: Any) -> Any:
            yield key, sum(1 for _ in elements)

    return Mean(), Count()


def build(job: str, env: Any) -> None:
    """Add ``job``'s operators to ``env`` (imports undertow here: the child's build)."""
    from undertow.common import Duration, Row, Time, Types, WatermarkStrategy
    from undertow.common.watermark_strategy import TimestampAssigner
    from undertow.datastream.connectors import DiscardingSink, NumberSequenceSource
    from undertow.datastream.functions import KeyedProcessFunction
    from undertow.datastream.state import ValueStateDescriptor
    from undertow.datastream.window import TumblingEventTimeWindows

    class Stamp(TimestampAssigner):
        def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
            return int(value.ts)

    class CountWithTimeout(KeyedProcessFunction):
        def open(self, runtime_context: Any) -> None:
            descriptor = ValueStateDescriptor("count", Types.PICKLED_BYTE_ARRAY())
            self.state = runtime_context.get_state(descriptor)

        def process_element(self, value: Any, ctx: Any) -> None:
            current = self.state.value()
            seen = 0 if current is None else current.seen
            current = Row(key=value.user, seen=seen + 1, last=ctx.timestamp())
            self.state.update(current)
            ctx.timer_service().register_event_time_timer(current.last + 60_000)

        def on_timer(self, timestamp: int, ctx: Any) -> Any:
            result = self.state.value()
            if result is not None and timestamp == result.last + 60_000:
                yield result.key, result.seen

    rows = env.from_source(
        NumberSequenceSource(1, env.rows), WatermarkStrategy.no_watermarks(), "numbers"
    ).map(lambda x: Row(user=x % 1000, amount=x % 7, ts=x // 10))
    if job == "reduce":
        out = rows.key_by(lambda r: r.user).reduce(
            lambda a, b: Row(user=a.user, amount=a.amount + b.amount, ts=b.ts)
        )
    else:
        timed = rows.assign_timestamps_and_watermarks(
            WatermarkStrategy.for_bounded_out_of_orderness(
                Duration.of_seconds(1)
            ).with_timestamp_assigner(Stamp())
        ).key_by(lambda r: r.user)
        windowed = timed.window(TumblingEventTimeWindows.of(Time.seconds(10)))
        mean, count = window_functions()
        if job == "window":
            out = windowed.aggregate(mean)
        elif job == "window-process":
            out = windowed.process(count)
        else:
            out = timed.process(CountWithTimeout())
    out.sink_to(DiscardingSink())


def run(job: str, rows: int) -> float:
    """Seconds to run ``job`` over ``rows`` numbers (in this process's undertow)."""
    from undertow.common import Configuration
    from undertow.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment(
        Configuration(
            {
                "execution.target": "local",
                "rest.port": "-1",
                "execution.checkpointing.interval": "1 s",
                # as throughput.NO_FINAL_CHECKPOINT: no idle wait for a final checkpoint
                "execution.checkpointing.checkpoints-after-tasks-finish": "false",
            }
        )
    )
    env.set_parallelism(2)
    env.rows = rows  # type: ignore[attr-defined]
    build(job, env)
    start = time.perf_counter()
    env.execute(f"pyflink-style {job}")
    return time.perf_counter() - start


def child(rows: int) -> None:
    """One round of every job in this interpreter: prints ``{job: rows/s}`` as JSON."""
    run("reduce", 20_000)  # the fork server's start, outside the timed runs
    rates = {}
    for job in JOBS:
        small, full = run(job, rows // 8), run(job, rows)
        rates[job] = (rows - rows // 8) / (full - small)
    print(json.dumps(rates), flush=True)


def targets(medians: ab_sides.Medians) -> list[str]:
    """With a build before: each job no slower than it (within the rounds' noise)."""
    if "before" not in medians:
        return []
    lines = []
    for job in JOBS:
        ratio = medians["after"][job] / medians["before"][job]
        met = "met" if ratio >= GOAL_NO_WORSE else "missed"
        lines.append(f"target {job} no worse: {ratio:.2f}x (goal >= {GOAL_NO_WORSE}x): {met}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=400_000)
    ab_sides.add_arguments(parser)
    args = parser.parse_args()
    if args.child:
        child(args.rows)
        return
    medians = ab_sides.compare(__file__, ["--rows", str(args.rows)], JOBS, "rows/s",
                               before=args.before, rounds=args.rounds,
                               weighted=args.weighted)  # fmt: skip
    for line in targets(medians):
        print(line)


if __name__ == "__main__":
    main()
