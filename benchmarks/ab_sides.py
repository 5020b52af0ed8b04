"""Two builds of undertow side by side, for benchmarks that measure in a child interpreter.

:func:`compare` runs ``script --child ARGS`` once per side per round, alternating which side
goes first, with ``--before PYTHON`` as the other build's interpreter (for instance main's
source through a wrapper that sets ``PYTHONPATH``) and this interpreter as "after"; the child
prints one JSON object (figure name -> value) as its last line. ``weighted`` runs each side in
a cgroup of the highest CPU weight (``compare_commits.py``'s), so other work on a shared
machine takes little from either side. Every round's figures are printed with the load, then
the medians and the after/before ratios; the medians are returned for the target lines.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence

from compare_commits import release_weight, weighted_prefix

Medians = dict[str, dict[str, float]]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options every script that measures through :func:`compare` takes: ``--rounds``,
    ``--before``, ``--weighted`` and the hidden ``--child`` (the measuring side)."""
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--before", help="the Python of another build of undertow")
    parser.add_argument("--weighted", action="store_true", help="each side in a cgroup of the "
                        "highest CPU weight (compare_commits.py's)")  # fmt: skip
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)


def compare(script: str, child_args: Sequence[str], names: Sequence[str], unit: str, *,
            before: str | None, rounds: int, weighted: bool) -> Medians:  # fmt: skip
    """Medians per side (``"before"`` only with ``before``) of each figure in ``names``."""
    prefix = weighted_prefix() if weighted else []
    if prefix is None:
        raise SystemExit("--weighted needs root and the cgroup v1 cpu controller")
    try:
        return _rounds(script, child_args, names, unit, before, rounds, prefix)
    finally:
        if weighted:
            release_weight()


def _rounds(script: str, child_args: Sequence[str], names: Sequence[str], unit: str,
            before: str | None, rounds: int, prefix: list[str]) -> Medians:  # fmt: skip
    print(f"{time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC, {' '.join(child_args)}, "
          f"weighted: {'yes' if prefix else 'no'}, load {os.getloadavg()[0]:.1f}")  # fmt: skip
    sides = {"after": sys.executable} if before is None else {
        "before": before, "after": sys.executable}  # fmt: skip
    results: dict[str, list[dict[str, float]]] = {name: [] for name in sides}
    for round_ in range(rounds):
        order = list(sides) if round_ % 2 == 0 else list(reversed(sides))
        for side in order:
            done = subprocess.run([*prefix, sides[side], script, "--child", *child_args],
                                  capture_output=True, text=True, check=True)  # fmt: skip
            figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
            results[side].append(figures)
            shown = ", ".join(f"{name} {figures[name]:,.0f}" for name in names)
            print(f"round {round_} {side:<6} {unit}: {shown} "
                  f"(load {os.getloadavg()[0]:.1f})", flush=True)  # fmt: skip
    medians = {side: {name: statistics.median(r[name] for r in results[side]) for name in names}
               for side in sides}  # fmt: skip
    width = max(len(name) for name in names) + 2
    print(f"{'median ' + unit:<{width}}" + "".join(f"{side:>10}" for side in sides)
          + (f"{'after/before':>14}" if before else ""))  # fmt: skip
    for name in names:
        line = f"{name:<{width}}" + "".join(f"{medians[side][name]:>10,.0f}" for side in sides)
        if before:
            line += f"{medians['after'][name] / medians['before'][name]:>14.2f}"
        print(line)
    return medians
