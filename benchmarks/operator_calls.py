"""CPU per record of the operators around user functions, on two builds of undertow in one run.

What a change to their per-batch code costs (hooks bound when the job is built, the built-in
aggregations' first-record check): ``map`` with a function object (``StreamMap``) and the
rolling ``key_by(...).sum(1)`` of pairs (``StreamGroupedReduce`` with its pair fold), each
built through the DataStream API as a job builds it and run by the testing kit's harness over
batches of 2,000 records. The figure is CPU time of the process (``time.process_time``), so
that a loaded machine's run queue does not count. ``--before PYTHON`` names the interpreter
of another build (a commit's venv made by ``compare_commits.py``, or a script that runs python
with another ``PYTHONPATH``); the two sides alternate per round; medians, after/before ratios
and one target line per operator (records per CPU second, after/before >= ``--goal``).
Usage::

    python benchmarks/operator_calls.py [--rounds 9] [--before PYTHON] [--goal 0.95]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

BATCH, BATCHES = 2_000, 300
OPERATORS = ("map", "sum(1)")


def child() -> None:
    """ns of CPU per record of each operator, in this interpreter's undertow, as JSON."""
    from undertow.datastream import MapFunction, StreamExecutionEnvironment
    from undertow.testing.harness import (
        KeyedOneInputOperatorTestHarness,
        OneInputOperatorTestHarness,
    )

    class Identity(MapFunction):
        def map(self, value: Any) -> Any:
            return value

    env = StreamExecutionEnvironment.get_execution_environment()
    pairs = [(i % 500, i) for i in range(BATCH)]
    stream = env.from_collection(pairs)
    built = {
        "map": (OneInputOperatorTestHarness, stream.map(Identity())),
        "sum(1)": (KeyedOneInputOperatorTestHarness, stream.key_by(lambda r: r[0]).sum(1)),
    }
    ns = {}
    for name, (harness_type, declared) in built.items():
        with harness_type(declared._transformation.operator) as harness:
            for _ in range(10):  # warm-up: state for every key, caches
                harness.operator.process_batch(pairs, None)
                harness.clear_output()
            start = time.process_time()
            for _ in range(BATCHES):
                harness.operator.process_batch(pairs, None)
                harness.clear_output()
            ns[name] = (time.process_time() - start) / (BATCHES * BATCH) * 1e9
    print(json.dumps(ns))


def side(python: str) -> dict[str, float]:
    done = subprocess.run([python, __file__, "--child"], capture_output=True, text=True,
                          check=True)  # fmt: skip
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--before", help="the Python of another build of undertow")
    parser.add_argument("--goal", type=float, default=0.95)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child()
        return
    sides = {"after": sys.executable} if args.before is None else {
        "before": args.before, "after": sys.executable}  # fmt: skip
    results: dict[str, list[dict[str, float]]] = {name: [] for name in sides}
    for round_ in range(args.rounds):
        for name in list(sides) if round_ % 2 == 0 else list(reversed(sides)):
            ns = side(sides[name])
            results[name].append(ns)
            shown = ", ".join(f"{op} {ns[op]:.1f}" for op in OPERATORS)
            print(f"round {round_} {name:<6} ns CPU/record: {shown} (load "
                  f"{os.getloadavg()[0]:.1f})", flush=True)  # fmt: skip
    print(f"{'median ns':<10}" + "".join(f"{name:>10}" for name in sides)
          + (f"{'after/before':>14}" if "before" in sides else ""))  # fmt: skip
    for op in OPERATORS:
        med = {name: statistics.median(r[op] for r in results[name]) for name in sides}
        line = f"{op:<10}" + "".join(f"{med[name]:>10.1f}" for name in sides)
        if "before" in sides:
            line += f"{med['after'] / med['before']:>14.2f}"
        print(line)
    print(f"load at end {os.getloadavg()[0]:.1f}")
    if "before" in sides:
        for op in OPERATORS:
            before = statistics.median(r[op] for r in results["before"])
            after = statistics.median(r[op] for r in results["after"])
            speed = before / after  # records per CPU second, after/before
            verdict = "met" if speed >= args.goal else "missed"
            print(f"target {op} no slower: {speed:.2f}x records per CPU second "
                  f"(goal >= {args.goal}x): {verdict}")  # fmt: skip


if __name__ == "__main__":
    main()
