"""``execute_and_collect`` throughput with the driver's results bounded (the default
``undertow.collect.buffer-size``, 32 MiB, and a small window) against an unbounded setting
(a window of 1 PiB: credit never runs out, as before the bound), in the same run.

Each job: a number sequence (parallelism 2, ``local`` target: worker processes) mapped to
``(n, text)`` records of ``--pad`` characters, collected by the driver, which iterates them as
fast as it can; checkpoints every 500 ms (exactly once: records come once their checkpoint
completed). The sides alternate for ``--rounds`` rounds; a row shows each side's median
records/s and the most bytes the driver held that the reader had not taken. The last line is
``target collect throughput with bound: X (goal >= 0.9x): met|missed``, X the default window's
median over the unbounded one's.

Usage: ``python benchmarks/collect_throughput.py [--records 400000] [--pad 100] [--rounds 3]``
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

from undertow.common import Configuration, WatermarkStrategy
from undertow.datastream import StreamExecutionEnvironment
from undertow.datastream.connectors import NumberSequenceSource
from undertow.testing.collect import collect_statistics

#: side -> undertow.collect.buffer-size
SIDES = {
    "unbounded (1 PiB)": "1125899906842624 b",
    "bound 32 MiB (default)": "32 mb",
    "bound 1 MiB": "1 mb",
}
BASELINE, TARGET = "unbounded (1 PiB)", "bound 32 MiB (default)"
GOAL = 0.9


def run_job(buffer_size: str, records: int, pad: int, checkpoints: str) -> tuple[float, int]:
    """Records/s the driver read, and the most result bytes it held unread (outside an
    overdraft; ``peak_unread``)."""
    env = StreamExecutionEnvironment.get_execution_environment(Configuration({
        "execution.target": "local",
        "rest.port": "-1",
        "undertow.collect.buffer-size": buffer_size,
        "execution.checkpointing.interval": "500 ms",
        "execution.checkpointing.dir": checkpoints,
    }))  # fmt: skip
    env.set_parallelism(2)
    text = "x" * pad
    numbers = env.from_source(
        NumberSequenceSource(0, records - 1), WatermarkStrategy.no_watermarks(), "numbers"
    )
    padded = numbers.map(lambda n: (n, text))
    count = 0
    with padded.execute_and_collect("collect throughput") as results:
        first = time.perf_counter()
        for _ in results:
            count += 1
            if count == 1:
                first = time.perf_counter()  # the job is up: time from its first record
        peak = collect_statistics(results).peak_unread
    elapsed = time.perf_counter() - first
    if count != records:
        raise SystemExit(f"collected {count} records of {records} (buffer {buffer_size})")
    return count / elapsed, peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=400_000)
    parser.add_argument("--pad", type=int, default=100, help="characters of text per record")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    rates: dict[str, list[float]] = {side: [] for side in SIDES}
    peaks: dict[str, int] = dict.fromkeys(SIDES, 0)
    with tempfile.TemporaryDirectory(prefix="collect-throughput-") as tmp:
        for round_ in range(args.rounds):
            order = list(SIDES) if round_ % 2 == 0 else list(reversed(SIDES))
            for side in order:
                rate, peak = run_job(SIDES[side], args.records, args.pad, f"{tmp}/{side[:5]}")
                rates[side].append(rate)
                peaks[side] = max(peaks[side], peak)
    print(f"{args.records:,} records of {args.pad} characters, {args.rounds} rounds, "
          "parallelism 2 -> collect, local target, checkpoints every 500 ms")  # fmt: skip
    print("| side | records/s (median) | vs unbounded | most held unread |")
    print("|---|---|---|---|")
    base = statistics.median(rates[BASELINE])
    for side in SIDES:
        median = statistics.median(rates[side])
        print(f"| {side} | {median:,.0f} | {median / base:.2f}x | {peaks[side] / 2**20:.2f} MiB |")
    ratio = statistics.median(rates[TARGET]) / base
    verdict = "met" if ratio >= GOAL else "missed"
    print(f"target collect throughput with bound: {ratio:.2f}x (goal >= {GOAL}x): {verdict}")


if __name__ == "__main__":
    main()
