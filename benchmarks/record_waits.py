"""Where the record job's workers wait (issue 31): run, queued or asleep, per worker and task.

The job is ``benchmarks/record_vs_loop.py``'s (``throughput.py``'s pipeline on the ``local``
target, no final checkpoint unless a variant asks for one). While it runs, a sampler reads
``/proc/<pid>/task/<pid>/schedstat`` of every worker's main thread (its event loop, where
every task of the worker runs) and splits the thread's life into three parts
(:class:`process_cpu.ThreadLife`):

- **ran**: on a core (the CPU per row below is the workers' ran time over the rows);
- **queued**: runnable on a run queue while other processes held the cores (the machine's
  other work, not the job's: ``--weighted``, a cgroup of the highest CPU weight, shrinks it);
- **slept**: blocked in the event loop's ``select``, every task of the worker waiting: for
  input, for credit from a consumer in another worker, or for a checkpoint to end.

Beside it, each task's own busy / backpressured / idle milliseconds from the JobMaster's
metrics (Flink's ``busyTimeMsPerSecond`` family; a task that waits while the other task of its
worker runs counts that time as its wait, so the tasks' waits overlap the worker's run time)
and the records each keyed subtask took in (the key split between the workers).

Variants alternate in every round (``--variant NAME:KEY=VALUE,...``; ``parallelism.default``
sets the job's parallelism). The two targets: the busiest worker, the one that sets the job's
pace, sleeps at most :data:`BUSIEST_SLEPT_GOAL` of its life in the first variant (the job is
CPU-bound wherever it gets the CPU), and, when the second variant adds checkpoints to the
first (:func:`checkpoint_pair`), it adds at most :data:`CHECKPOINT_SLEPT_GOAL` to the workers'
slept share, median of the rounds' differences. Usage::

    python benchmarks/record_waits.py [--rows N] [--rounds R] [--weighted] [--variant ...]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import compare_commits
import process_cpu
import record_settings
import record_vs_loop
import throughput
from throughput import key_of, to_pair

from undertow.common import Configuration, WatermarkStrategy
from undertow.datastream import StreamExecutionEnvironment
from undertow.datastream.connectors import DiscardingSink, NumberSequenceSource

DEFAULT_VARIANTS = (
    "p=2, no checkpoints:",
    "p=2, checkpoints every 1 s:execution.checkpointing.interval=1 s",
    "p=2, every 1 s, final checkpoint:execution.checkpointing.interval=1 s,"
    "execution.checkpointing.checkpoints-after-tasks-finish=true",
    "p=1, no checkpoints:parallelism.default=1",
)
#: The busiest worker may sleep at most this share of its life (target 1).
BUSIEST_SLEPT_GOAL = 0.05
#: Checkpoints every second may add at most this much to the workers' slept share (target 2).
CHECKPOINT_SLEPT_GOAL = 0.02


@dataclass(frozen=True)
class TaskWait:
    """One subtask's time (ms) as its metrics split it, and the records it took in."""

    name: str
    busy_ms: float
    backpressured_ms: float
    idle_ms: float
    records_in: int


@dataclass(frozen=True)
class Run:
    """One job run: its rows and wall seconds, each worker's main thread, each task."""

    rows: int
    wall_s: float
    workers: tuple[process_cpu.ThreadLife, ...]
    tasks: tuple[TaskWait, ...]

    @property
    def ns_per_row(self) -> float:
        return sum(w.ran_s for w in self.workers) / self.rows * 1e9

    @property
    def slept_share(self) -> float:
        """The workers' slept seconds over their lives' seconds, all workers together."""
        lives = sum(w.seconds for w in self.workers)
        return sum(w.slept_s for w in self.workers) / lives if lives > 0 else 0.0

    @property
    def busiest(self) -> process_cpu.ThreadLife:
        """The worker that ran longest: the one whose CPU sets the job's pace."""
        return max(self.workers, key=lambda w: w.ran_s)


def workers_of(
    lives: dict[int, process_cpu.ThreadLife], root: int
) -> tuple[process_cpu.ThreadLife, ...]:
    """The job's workers among the sampled processes: those not forked by ``root`` itself
    (the ``local`` target's fork server is ``root``'s child, the workers are its children)."""
    return tuple(life for life in lives.values() if life.parent != root)


def run_job(rows: int, settings: dict[str, str]) -> Run:
    """One run of the job with ``settings``, sampled while it runs (see the docstring)."""
    settings = {**record_vs_loop.NO_FINAL_CHECKPOINT, **settings}
    parallelism = int(settings.pop("parallelism.default", "2"))
    env = StreamExecutionEnvironment.get_execution_environment(
        Configuration({"execution.target": "local", "rest.port": "-1", **settings})
    )
    env.set_parallelism(parallelism)
    (
        env.from_source(NumberSequenceSource(1, rows), WatermarkStrategy.no_watermarks(), "seq")
        .map(to_pair)
        .key_by(key_of)
        .sum(1)
        .sink_to(DiscardingSink())
    )
    views: dict[tuple[int, int], Any] = {}
    with process_cpu.RunQueueWait(os.getpid()) as sampler:
        start = time.perf_counter()
        client = env.execute_async("record waits")
        master: Any = client._master  # the JobMaster's metrics (REST is off)
        keys = [(v.id, s) for v in master.job_graph.vertices for s in range(v.parallelism)]
        while True:
            ended = client.get_job_status().result().is_globally_terminal_state()
            for key in keys:
                if (view := master.task_metrics.view(*key)) is not None:
                    views[key] = view
            if ended:
                break
            time.sleep(0.05)
        wall = time.perf_counter() - start
    tasks = tuple(
        TaskWait(f"v{v}/{s}", view.busy_ms, view.backpressured_ms, view.idle_ms, view.records_in)
        for (v, s), view in sorted(views.items())
    )
    return Run(rows, wall, workers_of(sampler.main_threads(), os.getpid()), tasks)


def describe(run: Run) -> str:
    """One line per run: rows/s, CPU per row, each worker's split, each task's waits."""
    parts = [f"{run.rows / run.wall_s:>11,.0f} rows/s {run.ns_per_row:6.1f} ns CPU/row"]
    for i, w in enumerate(sorted(run.workers, key=lambda w: -w.ran_s)):
        parts.append(f"worker {i}: ran {w.share(w.ran_s):.0%} queued {w.share(w.waited_s):.0%} "
                     f"slept {w.share(w.slept_s):.1%} of {w.seconds:.2f} s")  # fmt: skip
    for t in run.tasks:
        total = t.busy_ms + t.backpressured_ms + t.idle_ms
        parts.append(f"{t.name} bp {t.backpressured_ms / total:.0%} idle {t.idle_ms / total:.0%}"
                     + (f" in {t.records_in:,}" if t.records_in else ""))  # fmt: skip
    return "; ".join(parts)


def added_slept(runs: dict[str, list[Run]], base: str, other: str) -> float:
    """Median over the rounds of ``other``'s slept share minus ``base``'s in the same round."""
    pairs = zip(runs[other], runs[base], strict=True)
    return statistics.median(o.slept_share - b.slept_share for o, b in pairs)


def checkpoint_pair(variants: dict[str, dict[str, str]]) -> tuple[str, str] | None:
    """The first variant and the second, when only the second sets a checkpoint interval
    (target 2 compares them); else ``None``."""
    names = list(variants)
    key = "execution.checkpointing.interval"
    if len(names) < 2 or key in variants[names[0]] or key not in variants[names[1]]:
        return None
    return names[0], names[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=8_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--weighted", action="store_true", help="run in a cgroup of the "
                        "highest CPU weight (root, cgroup v1)")  # fmt: skip
    parser.add_argument("--variant", action="append", help="NAME:KEY=VALUE,...")
    args = parser.parse_args()
    if args.weighted:
        if compare_commits.weighted_prefix() is None:
            raise SystemExit("--weighted needs root and the cgroup v1 cpu controller")
        group = compare_commits.CPU_CGROUP / f"undertow-bench-{os.getpid()}"
        (group / "cgroup.procs").write_text(str(os.getpid()))  # the job's processes inherit it
    try:
        measure(args)
    finally:
        if args.weighted:
            compare_commits.release_weight()


def measure(args: argparse.Namespace) -> None:
    """The rounds, the table of medians and the target lines (see the module docstring)."""
    variants = dict(record_settings.parse_variant(v) for v in args.variant or DEFAULT_VARIANTS)
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
          f"weighted: {args.weighted}; {args.rows:,} rows")  # fmt: skip
    runs: dict[str, list[Run]] = {name: [] for name in variants}
    with tempfile.TemporaryDirectory(prefix="record-waits-") as workdir:
        run_job(throughput.FIRST_JOB_RECORDS, {})  # the fork server's start
        for round_ in range(args.rounds):
            order = list(variants) if round_ % 2 == 0 else list(variants)[::-1]
            for name in order:
                settings = {"execution.checkpointing.dir": workdir, **variants[name]}
                runs[name].append(run := run_job(args.rows, settings))
                print(f"  round {round_} {name:<34} {describe(run)}; "
                      f"load {os.getloadavg()[0]:.1f}", flush=True)  # fmt: skip
    print(f"{'variant (medians)':<36}{'rows/s':>11}{'ns CPU/row':>11}{'slept':>7}"
          f"{'busiest slept':>14}{'queued':>8}")  # fmt: skip
    for name, done in runs.items():
        queued = [sum(w.waited_s for w in r.workers) / sum(w.seconds for w in r.workers)
                  for r in done]  # fmt: skip
        print(f"{name:<36}{statistics.median(r.rows / r.wall_s for r in done):>11,.0f}"
              f"{statistics.median(r.ns_per_row for r in done):>11.1f}"
              f"{statistics.median(r.slept_share for r in done):>7.1%}"
              f"{statistics.median(r.busiest.share(r.busiest.slept_s) for r in done):>14.1%}"
              f"{statistics.median(queued):>8.1%}")  # fmt: skip
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    first = next(iter(variants))
    busiest = statistics.median(r.busiest.share(r.busiest.slept_s) for r in runs[first])
    verdict = "met" if busiest <= BUSIEST_SLEPT_GOAL else "missed"
    print(f"target record-job-busiest-worker-slept: {busiest:.1%} of its life in {first!r} "
          f"(goal <= {BUSIEST_SLEPT_GOAL:.0%}): {verdict}")  # fmt: skip
    if (pair := checkpoint_pair(variants)) is not None:
        added = added_slept(runs, *pair)
        verdict = "met" if added <= CHECKPOINT_SLEPT_GOAL else "missed"
        print(f"target record-job-checkpoints-added-sleep: {added:+.1%} slept in {pair[1]!r} "
              f"over {pair[0]!r} (goal <= {CHECKPOINT_SLEPT_GOAL:+.0%}): {verdict}")  # fmt: skip


if __name__ == "__main__":
    main()
