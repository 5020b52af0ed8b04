"""Checkpoint duration under backpressure: aligned vs unaligned vs aligned with a timeout.

FLIP-76's experiment, scaled to a laptop: source -> map -> sleepy map -> map -> sink, every
edge a rebalance, p=2, on the ``local`` target, checkpoints every 200 ms. The sleepy map spins
a fixed time per record, so the pipeline in front of it is always full. For each sleep level
and mode the table shows the completed checkpoints' duration p50/p90 (trigger to last
acknowledgement, from the JobMaster's console line), checkpoints completed per minute, the
in-flight data a checkpoint persisted (median), and throughput relative to checkpointing off
in the same run (the sources offer 20 % more than the sleepy map takes, so a run lasts
about ``--seconds`` and throughput is bounded by the sleepy map). Targets (issue 5): unaligned
p50 <= 50 ms at every sleep level while aligned grows with backpressure; unaligned throughput
>= 0.9x checkpointing off.

Usage: ``python benchmarks/unaligned.py [--seconds S] [--sleeps-ms 0,0.1,1]``
"""

from __future__ import annotations

import argparse
import io
import re
import statistics
import sys
import tempfile
import time
from typing import Any

from undertow.common import Configuration, WatermarkStrategy
from undertow.datastream import MapFunction, StreamExecutionEnvironment
from undertow.datastream.connectors import DataGeneratorSource, DiscardingSink

MODES: dict[str, dict[str, str]] = {
    "off": {},
    "aligned": {"execution.checkpointing.interval": "200 ms"},
    "unaligned": {
        "execution.checkpointing.interval": "200 ms",
        "execution.checkpointing.unaligned.enabled": "true",
    },
    "aligned, 1 s timeout": {
        "execution.checkpointing.interval": "200 ms",
        "execution.checkpointing.unaligned.enabled": "true",
        "execution.checkpointing.aligned-checkpoint-timeout": "1 s",
    },
}
COMPLETED = re.compile(
    r"checkpoint \d+ completed in (?P<ms>\d+) ms"
    r".*?(?:in-flight (?P<size>[\d.]+) (?P<unit>\w+))?\)$",
    re.M,
)
UNITS = {"B": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3}


class Spin(MapFunction):
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def map(self, value: Any) -> Any:
        until = time.perf_counter() + self.seconds
        while time.perf_counter() < until:
            pass
        return value


class Tee(io.TextIOBase):
    """Keeps what the JobMaster writes to stderr (its console lines) instead of printing it."""

    def __init__(self) -> None:
        self.lines = io.StringIO()

    def write(self, text: str) -> int:
        self.lines.write(text)
        return len(text)


def run(
    mode: str, sleep_ms: float, records: int, rate: float | None, directory: str
) -> tuple[float, str]:
    settings = {"execution.target": "local", "execution.checkpointing.dir": directory,
                "rest.port": "-1"}  # fmt: skip
    settings.update(MODES[mode])
    env = StreamExecutionEnvironment.get_execution_environment(Configuration(settings))
    env.set_parallelism(2)
    source = DataGeneratorSource(lambda i: (i, "x" * 100), count=records, records_per_second=rate)
    stream = env.from_source(source, WatermarkStrategy.no_watermarks(), "source")
    stream = stream.rebalance().map(lambda v: v).name("map 1")
    stream = stream.rebalance().map(Spin(sleep_ms / 1000)).name("sleepy map")
    stream = stream.rebalance().map(lambda v: v).name("map 2")
    stream.rebalance().sink_to(DiscardingSink())
    tee, saved = Tee(), sys.stderr
    sys.stderr = tee
    try:
        started = time.perf_counter()
        env.execute(f"unaligned benchmark: {mode}, {sleep_ms} ms")
        elapsed = time.perf_counter() - started
    finally:
        sys.stderr = saved
    return elapsed, tee.lines.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=6.0, help="target run time per job")
    parser.add_argument("--sleeps-ms", default="0,0.1,1", help="sleep per record, comma list")
    args = parser.parse_args()
    print(f"{'sleep':>7} {'mode':<22} {'p50 ms':>8} {'p90 ms':>8} {'cp/min':>7} "
          f"{'in-flight':>10} {'throughput':>10}")  # fmt: skip
    for sleep_ms in (float(s) for s in args.sleeps_ms.split(",")):
        # The sources (one reader each) offer 20 % more than the two sleepy subtasks take, for
        # the whole run: a bounded source that finished early would stop checkpoints
        # (no FLIP-147 yet). Without a sleep, records are cheap: as fast as possible.
        rate = 1.2 * 1000 / sleep_ms if sleep_ms > 0 else None
        records = int(args.seconds * 2 * rate) if rate is not None else 400_000
        baseline = None
        for mode in MODES:
            with tempfile.TemporaryDirectory() as directory:
                elapsed, console = run(mode, sleep_ms, records, rate, directory)
            baseline = baseline or elapsed
            found = list(COMPLETED.finditer(console))
            durations = [int(m.group("ms")) for m in found]
            sizes = [float(m.group("size")) * UNITS[m.group("unit")]
                     for m in found if m.group("size")]  # fmt: skip
            if durations:
                p50 = statistics.median(durations)
                p90 = statistics.quantiles(durations, n=10)[-1] if len(durations) > 1 else p50
                per_min = len(durations) / elapsed * 60
                size = f"{statistics.median(sizes) / 1024:.0f} KiB" if sizes else "-"
                cells = f"{p50:>8.0f} {p90:>8.0f} {per_min:>7.0f} {size:>10}"
            else:
                cells = f"{'-':>8} {'-':>8} {'-':>7} {'-':>10}"
            print(f"{sleep_ms:>7} {mode:<22} {cells} {baseline / elapsed:>9.2f}x", flush=True)


if __name__ == "__main__":
    main()
