"""The record path's CPU per row under other settings, alternating in one run (issue 31).

What scales with the number of buffers (credits, the buffer objects, the subpartition queues,
socket writes, debloating's samples) is the difference the buffer size makes to the job's CPU
per row; this script measures it directly. Each variant is a set of settings on top of the
job of ``benchmarks/record_vs_loop.py`` (``throughput.py``'s job at p=2 on the ``local``
target, checkpoints every second), run in rounds that alternate the variants, each variant's
figure its steady state (:func:`record_vs_loop.steady`: a run of ``--rows`` minus one of an
eighth) over every process of the job. A round's ratio is a variant's CPU per row over the
first variant's in the same round (the machine's phase moves both), and the printed ratio is
the median of the rounds'. Usage::

    python benchmarks/record_settings.py [--rows N] [--rounds R]
        [--variant 'NAME:KEY=VALUE,KEY=VALUE' ...]

Without ``--variant``: the defaults, segments of 4, 8, 16 and 128 KiB, and debloating off.
The target: the first variant (the defaults, unless ``--variant`` says otherwise) within 5%
of the cheapest variant's CPU per row, so that the defaults leave no per-buffer cost on the
table.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import record_vs_loop
import throughput

DEFAULT_VARIANTS = (
    "defaults (32 KiB):",
    "segments of 4 KiB:taskmanager.memory.segment-size=4kb",
    "segments of 8 KiB:taskmanager.memory.segment-size=8kb",
    "segments of 16 KiB:taskmanager.memory.segment-size=16kb",
    "segments of 128 KiB:taskmanager.memory.segment-size=128kb",
    "debloating off:taskmanager.network.memory.buffer-debloat.enabled=false",
)
#: The default may cost at most this much more CPU per row than the cheapest variant.
GOAL = 1.05


def parse_variant(text: str) -> tuple[str, dict[str, str]]:
    """``NAME:KEY=VALUE,KEY=VALUE`` (the settings may be empty) as a name and its settings."""
    name, _, pairs = text.partition(":")
    settings = {}
    for pair in filter(None, pairs.split(",")):
        key, sep, value = pair.partition("=")
        if not sep:
            raise SystemExit(f"variant {name!r}: {pair!r} is not KEY=VALUE")
        settings[key.strip()] = value.strip()
    return name.strip(), settings


def ratios(per_row: dict[str, list[float]]) -> dict[str, float]:
    """Each variant's median over the rounds of its CPU per row over the first variant's."""
    first = next(iter(per_row.values()))
    return {
        name: statistics.median(x / y for x, y in zip(values, first, strict=True))
        for name, values in per_row.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=4_000_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--variant", action="append", help="NAME:KEY=VALUE,...; first: base")
    args = parser.parse_args()
    variants = dict(parse_variant(v) for v in args.variant or DEFAULT_VARIANTS)
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    per_row: dict[str, list[float]] = {name: [] for name in variants}
    driver: dict[str, list[float]] = {name: [] for name in variants}
    with tempfile.TemporaryDirectory(prefix="record-settings-") as workdir:
        base = {"execution.checkpointing.interval": "1 s", "execution.checkpointing.dir": workdir}
        throughput.run_job(throughput.FIRST_JOB_RECORDS, 2, "local", base)  # the fork server
        for round_ in range(args.rounds):
            for name, settings in variants.items():
                merged = {**base, **settings}
                job = record_vs_loop.steady(
                    lambda n, s=merged: record_vs_loop.job_sample(n, s), args.rows
                )
                per_row[name].append(job.cpu_s / job.rows * 1e9)
                driver[name].append(job.driver_cpu_s / job.rows * 1e9)
                print(f"  round {round_} {name:<24} {per_row[name][-1]:7.1f} ns CPU/row "
                      f"(driver {driver[name][-1]:5.1f}); load {os.getloadavg()[0]:.1f}",
                      flush=True)  # fmt: skip
    relative = ratios(per_row)
    print(f"{'variant':<26}{'ns CPU/row':>11}{'range':>12}{'driver':>8}{'vs first':>10}")
    for name, values in per_row.items():
        print(f"{name:<26}{statistics.median(values):>11.1f}"
              f"{f'{min(values):.0f}-{max(values):.0f}':>12}"
              f"{statistics.median(driver[name]):>8.1f}{relative[name]:>10.3f}")  # fmt: skip
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    default = next(iter(variants))
    cheapest = min(relative, key=relative.__getitem__)
    figure = relative[default] / relative[cheapest]
    verdict = "met" if figure <= GOAL else "missed"
    print(f"target record-path-first-variant-vs-cheapest: {default} at {figure:.3f}x the CPU "
          f"per row of the cheapest variant, {cheapest} (goal <= {GOAL}x): {verdict}")  # fmt: skip


if __name__ == "__main__":
    main()
