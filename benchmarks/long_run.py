"""A long run: does memory level off while a job takes thousands of checkpoints?

The job is an ordinary stateful stream on the ``local`` target (two worker processes): an
unbounded generator (4,000 records a second per reader) of ``(user, amount)`` over 1,000 users
-> a keyed ``KeyedProcessFunction`` that keeps a running sum and a processing-time timer per
user (re-armed every 50 ms) -> a 1 s tumbling event-time window count -> a discarding sink,
with unaligned checkpoints every ``--interval-ms`` (50 ms: many checkpoints, each leaving
statistics, handles, channel-state files, retained checkpoints and acknowledgements behind).
Every ``--sample-s`` the script reads the resident set size (``VmRSS``) of this process (the
driver: JobMaster, checkpoint coordinator, REST API) and of the workers, and the number of
completed checkpoints (coordinator events).

The figure is the growth over the second half (state of every key built, buffers full,
Python's allocator warm by then), per 1,000 completed checkpoints: a leak per checkpoint or per
record shows as a steady climb; a plateau as about 0. The peer in the same run is a bare
Python loop in a process of its own (``--loop``): the same records at the same rate into the
same state (a running sum and a timer flag per user, counts per 1 s window of ``user % 10``,
windows dropped once 200 ms past), sampled at the same moments. Its growth over the second
half is what the interpreter and allocator drift by without the engine.

Both resident (``VmRSS``) and anonymous resident memory (``RssAnon``) are printed; the targets
read anonymous memory, what a process allocates itself and a leak grows. The resident set also
counts pages of mapped files, shared libraries' code and constants first touched late in a run:
in a 480 s run with ``/proc/PID/smaps`` snapshots every 20 s (2026-12-02 01:00 UTC), each
worker's resident set stepped once by 2.5 MiB, 236 s in for one and 460 s for the other, all of
it pages of pyarrow's, pandas' and numpy's libraries (anonymous memory +0.01 MiB in that step):
clean pages the kernel shares and can drop, bounded by the libraries' size.

Where the workers' growth comes from: ``--malloc-stats`` has each worker sample glibc's heap
(``benchmarks/malloc_probe``) and prints, over the same half, the heap's size, what is in use
in it and what is free in it; ``--allocator jemalloc`` runs everything (the job, its workers and
the loop) on jemalloc with Python's small-object allocator off (``PYTHONMALLOC=malloc``), the
usual advice for long-running Python services. Run the two side by side to compare.

Usage: ``python benchmarks/long_run.py [--seconds S] [--interval-ms MS] [--sample-s S]
[--allocator system|jemalloc] [--malloc-stats]``
"""

from __future__ import annotations

import argparse
import ctypes.util
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from undertow.common import Configuration, Duration, Time, WatermarkStrategy
from undertow.common.watermark_strategy import TimestampAssigner
from undertow.datastream import KeyedProcessFunction, RuntimeContext, StreamExecutionEnvironment
from undertow.datastream.connectors import DataGeneratorSource, DiscardingSink
from undertow.datastream.state import ValueStateDescriptor
from undertow.datastream.window import TumblingEventTimeWindows
from undertow.runtime.checkpoint.events import CheckpointEvent, Completed
from undertow.testing.oracle import worker_process_pids

sys.path.insert(0, str(Path(__file__).resolve().parent))
from process_cpu import rss_bytes

USERS = 1_000
#: The ``/proc/PID/status`` line the targets read: private anonymous resident memory.
ANON = "RssAnon"
#: Set in the environment this script re-runs itself in (``--allocator``, ``--malloc-stats``).
RELAUNCHED = "UNDERTOW_LONG_RUN_RELAUNCHED"
PROBE_DIR = Path(__file__).resolve().parent / "malloc_probe"
#: Growth allowed over the second half of the run, per 1,000 completed checkpoints (linear,
#: it would be 86 MiB a day at a checkpoint a second).
GOAL_MIB_PER_1000 = 1.0


class RunningSum(KeyedProcessFunction):
    """Per user: a running sum in state and a processing-time timer re-armed every 50 ms."""

    def open(self, runtime_context: RuntimeContext) -> None:
        self.total = runtime_context.get_state(ValueStateDescriptor("total"))
        self.armed = runtime_context.get_state(ValueStateDescriptor("armed"))

    def process_element(self, value: Any, ctx: KeyedProcessFunction.Context) -> Iterator[Any]:
        total = (self.total.value() or 0) + value[1]
        self.total.update(total)
        if self.armed.value() is None:
            self.armed.update(True)
            timers = ctx.timer_service()
            timers.register_processing_time_timer(timers.current_processing_time() + 50)
        yield (value[0], total, value[2])

    def on_timer(self, timestamp: int, ctx: KeyedProcessFunction.OnTimerContext) -> Iterator[Any]:
        self.armed.clear()
        return iter(())


class Stamp(TimestampAssigner):
    def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
        return int(value[2])


def generate(i: int) -> tuple[int, int, int]:
    return (i % USERS, 1, int(time.time() * 1000))


@dataclass(frozen=True)
class Sample:
    at_s: float
    checkpoints: int
    driver: int
    workers: int
    loop: int
    wall: float = 0.0  # time.time() of the sample
    # the same three, anonymous resident memory only (``RssAnon``)
    driver_anon: int = 0
    workers_anon: int = 0
    loop_anon: int = 0


def bare_loop() -> None:
    """The peer (``--loop``): the job's per-record work and state at its rate, until killed."""
    totals: dict[int, int] = {}
    armed: dict[int, int] = {}
    windows: dict[tuple[int, int], int] = {}
    i, rate, started = 0, 8_000, time.monotonic()
    while True:
        due = int((time.monotonic() - started) * rate)
        for _ in range(due - i):
            user, amount, ts = generate(i)
            i += 1
            totals[user] = totals.get(user, 0) + amount
            armed.setdefault(user, ts + 50)
            start = ts - ts % 1000
            windows[(user % 10, start)] = windows.get((user % 10, start), 0) + 1
        now = int(time.time() * 1000)
        for user in [u for u, at in armed.items() if at <= now]:  # the timers fire
            del armed[user]
        for window in [w for w in windows if w[1] + 1000 + 200 <= now]:  # the window fires
            del windows[window]
        time.sleep(0.01)


def run(seconds: float, interval_ms: int, sample_s: float) -> list[Sample]:
    env = StreamExecutionEnvironment.get_execution_environment(Configuration({
        "execution.target": "local",
        "execution.checkpointing.interval": f"{interval_ms} ms",
        "execution.checkpointing.unaligned.enabled": "true",
        "execution.checkpointing.dir": tempfile.mkdtemp(prefix="undertow-long-run-"),
        "rest.port": "-1",
    }))  # fmt: skip
    env.set_parallelism(2)
    source = DataGeneratorSource(generate, count=None, records_per_second=4_000)
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(
        Duration.of_millis(200)
    ).with_timestamp_assigner(Stamp())
    (
        env.from_source(source, strategy, "events")
        .key_by(lambda v: v[0])
        .process(RunningSum())
        .key_by(lambda v: v[0] % 10)
        .window(TumblingEventTimeWindows.of(Time.seconds(1)))
        .reduce(lambda a, b: (a[0], a[1] + b[1], max(a[2], b[2])))
        .sink_to(DiscardingSink())
    )
    client = env.execute_async("long run")
    coordinator = client._master.coordinator
    assert coordinator is not None
    completed = [0]
    forward = coordinator.listener

    def listen(event: CheckpointEvent) -> None:
        forward(event)
        if isinstance(event, Completed):
            completed[0] += 1

    coordinator.listener = listen
    peer = subprocess.Popen([sys.executable, __file__, "--loop"])
    samples: list[Sample] = []
    started = time.monotonic()
    try:
        while (now := time.monotonic() - started) < seconds:
            pids = worker_process_pids()
            sample = Sample(
                now, completed[0], rss_bytes(os.getpid()), sum(map(rss_bytes, pids)),
                rss_bytes(peer.pid), time.time(), rss_bytes(os.getpid(), ANON),
                sum(rss_bytes(pid, ANON) for pid in pids), rss_bytes(peer.pid, ANON),
            )  # fmt: skip
            samples.append(sample)
            print(f"{now:6.0f} s  {sample.checkpoints:6d} checkpoints  driver "
                  f"{sample.driver / 2**20:7.1f} MiB  workers {sample.workers / 2**20:7.1f} MiB "
                  f"(anonymous {sample.workers_anon / 2**20:7.1f})  bare loop "
                  f"{sample.loop / 2**20:6.1f} MiB", flush=True)  # fmt: skip
            time.sleep(sample_s)
    finally:
        peer.kill()
        peer.wait()
        client.cancel()
        client._master.wait_ended(60)
    return samples


def second_half_mib(samples: list[Sample], part: str) -> float:
    """MiB gained by ``part`` from the middle sample to the last."""
    return (getattr(samples[-1], part) - getattr(samples[len(samples) // 2], part)) / 2**20


def growth_per_1000(samples: list[Sample], part: str) -> tuple[float, int]:
    """MiB gained by ``part`` from the middle sample to the last, per 1,000 completed
    checkpoints in between; and those checkpoints."""
    checkpoints = samples[-1].checkpoints - samples[len(samples) // 2].checkpoints
    return second_half_mib(samples, part) * 1000 / max(checkpoints, 1), checkpoints


def relaunch_env(allocator: str, probe_dir: str | None, probe_s: float = 5.0) -> dict[str, str]:
    """The environment to run this script again in for ``allocator`` and the malloc probe
    (writing to ``probe_dir`` every ``probe_s``); the fork server, so the workers, and the loop
    inherit it."""
    env = dict(os.environ, **{RELAUNCHED: "1"})
    if allocator == "jemalloc":
        library = ctypes.util.find_library("jemalloc")
        if library is None:
            raise SystemExit("--allocator jemalloc: no libjemalloc on this machine "
                             "(Debian/Ubuntu: apt-get install libjemalloc2)")  # fmt: skip
        env["LD_PRELOAD"] = library
        env["PYTHONMALLOC"] = "malloc"  # every object from jemalloc, none from pymalloc
    if probe_dir is not None:
        env["UNDERTOW_MALLOC_PROBE"] = probe_dir
        env["UNDERTOW_MALLOC_PROBE_S"] = str(probe_s)
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(PROBE_DIR), env.get("PYTHONPATH", "")) if p
        )
    return env


@dataclass(frozen=True)
class HeapGrowth:
    """The workers' glibc heaps over the second half, summed, in bytes."""

    size: int
    in_use: int
    free: int


def heap_growth(probe_dir: Path, since: float) -> HeapGrowth:
    """From each worker's probe file: its last line minus its first at or after ``since``."""
    size = in_use = free = 0
    for path in probe_dir.glob("*.txt"):
        rows = [[float(x) for x in line.split()] for line in path.read_text().splitlines()]
        later = [row for row in rows if row[0] >= since]
        if len(later) >= 2:
            first, last = later[0], later[-1]
            size += int(last[1] - first[1])
            in_use += int(last[2] - first[2])
            free += int(last[3] - first[3])
    return HeapGrowth(size, in_use, free)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=300.0)
    parser.add_argument("--interval-ms", type=int, default=50)
    parser.add_argument("--sample-s", type=float, default=5.0)
    parser.add_argument("--allocator", choices=("system", "jemalloc"), default="system")
    parser.add_argument("--malloc-stats", action="store_true")
    parser.add_argument("--loop", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.loop:
        bare_loop()
        return
    if args.malloc_stats and args.allocator != "system":
        raise SystemExit("--malloc-stats reads glibc's heap: use it with --allocator system")
    if (args.allocator != "system" or args.malloc_stats) and not os.environ.get(RELAUNCHED):
        probe_dir = tempfile.mkdtemp(prefix="undertow-malloc-") if args.malloc_stats else None
        env = relaunch_env(args.allocator, probe_dir, args.sample_s)
        os.execve(sys.executable, [sys.executable, __file__, *sys.argv[1:]], env)
    print(f"allocator: {args.allocator}", flush=True)
    samples = run(args.seconds, args.interval_ms, args.sample_s)
    if len(samples) < 4:
        raise SystemExit("too short a run: take at least four samples")
    for kind, suffix in (("resident", ""), ("anonymous", "_anon")):
        driver, workers, loop = (second_half_mib(samples, part + suffix)
                                 for part in ("driver", "workers", "loop"))  # fmt: skip
        print(f"over the second half, {kind}: driver {driver:+.2f} MiB, workers "
              f"{workers:+.2f} MiB, bare loop (peer) {loop:+.2f} MiB")  # fmt: skip
    if os.environ.get("UNDERTOW_MALLOC_PROBE"):
        heap = heap_growth(Path(os.environ["UNDERTOW_MALLOC_PROBE"]),
                           samples[len(samples) // 2].wall)  # fmt: skip
        print(
            f"workers' glibc heaps over the second half: size {heap.size / 2**20:+.2f} MiB, "
            f"in use {heap.in_use / 2**20:+.2f} MiB, free {heap.free / 2**20:+.2f} MiB"
        )
    lines = []
    for part in ("driver", "workers"):
        figure, checkpoints = growth_per_1000(samples, part + "_anon")
        met = "met" if figure <= GOAL_MIB_PER_1000 else "missed"
        lines.append(f"target memory-{part}: {figure:+.2f} MiB anonymous per 1,000 checkpoints "
                     f"over {checkpoints} (goal <= {GOAL_MIB_PER_1000} MiB): {met}")  # fmt: skip
    print("\n".join(lines))


if __name__ == "__main__":
    main()
