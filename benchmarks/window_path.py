"""CPU per record of the window operator in pyflink_style.py's two window jobs, on two builds.

The operator runs in this process under the keyed operator test harness (heap state, real
timer service), fed as the job feeds it: named rows ``Row(user, amount, ts)`` of 1,000 users,
batches of 1,024 keyed by ``lambda r: r.user``, a 10 s tumbling event-time window, and after
every batch a watermark 1 s behind it (windows fire as they close). ``window``: the
``AggregateFunction`` (a mean); ``window-process``: the ``ProcessWindowFunction`` (a count over
the buffered pane). The figure is process CPU time per record over the batches and the
watermarks, the rows made beforehand; the median of ``--repeat`` runs per round.

The peer, in the same child: a plain Python loop doing the same work (the key read, the
window start, a dict of accumulators per (user, start) folded with the same
``AggregateFunction.add``, fired by the same watermarks). ``--before PYTHON`` runs another
build (for instance main's source through a wrapper that sets ``PYTHONPATH``) in alternating
rounds; ``--weighted`` runs each side in a cgroup of the highest CPU weight, as
``compare_commits.py --weighted``. Usage::

    python benchmarks/window_path.py [--rows N] [--rounds R] [--repeat K] [--before PYTHON]
        [--weighted]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ab_sides
import pyflink_style

JOBS = ("window", "window-process")
FLOOR = "plain loop"
BATCH = 1024
SIZE_MS = 10_000
#: Goals: the window operator's CPU per record at most this many times the plain loop's...
GOAL_VS_LOOP = 4.0
#: ... and, with --before, at most this fraction of the other build's.
GOAL_VS_BEFORE = 0.8


def rows_and_batches(rows: int) -> list[tuple[list[Any], list[int]]]:
    from undertow.common import Row

    values = [Row(user=x % 1000, amount=x % 7, ts=x // 10) for x in range(1, rows + 1)]
    return [
        (values[i : i + BATCH], [r.ts for r in values[i : i + BATCH]])
        for i in range(0, rows, BATCH)
    ]


def operator_ns(job: str, batches: list[tuple[list[Any], list[int]]]) -> float:
    """CPU ns per record of the window operator over ``batches`` (see the module doc)."""
    from undertow.api.window import TumblingEventTimeWindows
    from undertow.runtime.task.window_functions import (
        aggregate_window_contents,
        process_window_contents,
    )
    from undertow.runtime.task.window_operator import WindowOperator
    from undertow.testing.harness import KeyedOneInputOperatorTestHarness

    mean, count = pyflink_style.window_functions()
    contents = (
        aggregate_window_contents(mean) if job == "window" else process_window_contents(count)
    )
    assigner = TumblingEventTimeWindows.of(SIZE_MS)
    operator = WindowOperator(assigner=assigner, trigger=assigner.get_default_trigger(None),
                              key_selector=lambda r: r.user,
                              window_function=contents.window_function,
                              state_descriptor=contents.state_descriptor)  # fmt: skip
    harness = KeyedOneInputOperatorTestHarness(operator)
    harness.open()
    records = harness.output.records
    start = time.process_time()
    for values, timestamps in batches:
        operator.process_batch(values, timestamps)
        operator.process_watermark(timestamps[-1] - 1001)
        records.clear()
    operator.process_watermark(2**62)
    spent = time.process_time() - start
    harness.close()
    return spent / sum(len(values) for values, _ in batches) * 1e9


def loop_ns(batches: list[tuple[list[Any], list[int]]]) -> float:
    """CPU ns per record of a plain loop doing the ``window`` job's work."""
    mean, _ = pyflink_style.window_functions()
    add, create, result = mean.add, mean.create_accumulator, mean.get_result
    panes: dict[tuple[Any, int], Any] = {}
    out: list[Any] = []
    start = time.process_time()
    for values, timestamps in batches:
        for value, ts in zip(values, timestamps):
            pane = (value.user, ts - ts % SIZE_MS)
            acc = panes.get(pane)
            panes[pane] = add(value, create() if acc is None else acc)
        watermark = timestamps[-1] - 1001
        for pane in [p for p in panes if p[1] + SIZE_MS - 1 <= watermark]:
            out.append((pane[0], result(panes.pop(pane))))
        out.clear()
    out.extend(result(acc) for acc in panes.values())
    spent = time.process_time() - start
    return spent / sum(len(values) for values, _ in batches) * 1e9


def child(rows: int, repeat: int) -> None:
    """One round in this interpreter: prints a JSON object, name -> median ns per record."""
    batches = rows_and_batches(rows)
    figures = {job: statistics.median(operator_ns(job, batches) for _ in range(repeat))
               for job in JOBS}  # fmt: skip
    figures[FLOOR] = statistics.median(loop_ns(batches) for _ in range(repeat))
    print(json.dumps(figures), flush=True)


def targets(medians: dict[str, dict[str, float]]) -> list[str]:
    """The ``target`` lines: each job against the plain loop (the last side), and against
    the other build when there is one."""
    after = medians["after"]
    lines = []
    for job in JOBS:
        ratio = after[job] / after[FLOOR]
        met = "met" if ratio <= GOAL_VS_LOOP else "missed"
        lines.append(f"target {job} per record vs plain loop: {ratio:.2f}x "
                     f"(goal <= {GOAL_VS_LOOP:.1f}x): {met}")  # fmt: skip
        if "before" in medians:
            ratio = after[job] / medians["before"][job]
            met = "met" if ratio <= GOAL_VS_BEFORE else "missed"
            lines.append(f"target {job} per record vs before: {ratio:.2f}x "
                         f"(goal <= {GOAL_VS_BEFORE:.2f}x): {met}")  # fmt: skip
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=3)
    ab_sides.add_arguments(parser)
    args = parser.parse_args()
    if args.child:
        child(args.rows, args.repeat)
        return
    medians = ab_sides.compare(
        __file__, ["--rows", str(args.rows), "--repeat", str(args.repeat)], (*JOBS, FLOOR),
        "ns/record", before=args.before, rounds=args.rounds, weighted=args.weighted,
    )  # fmt: skip
    for line in targets(medians):
        print(line)


if __name__ == "__main__":
    main()
