"""Unaligned checkpoints behind a slow keyed batch function: row-range cuts on and off.

The job: record batches of ``--batch-rows`` numbers -> ``k = i % 8`` -> ``key_by("k")`` -> a
keyed batch process function that sleeps ``--row-us`` per row (a slow batch function) and
counts each key's rows -> a discarding sink, p=2, on ``local-threads`` (in one process, so the
baseline can switch the cut off: it declares the process operator uncuttable, as a chain with
``with_event_time`` is), unaligned checkpoints every 100 ms (``--interval-ms``). The source
offers far more than the function takes, so the keyed input stays full (backpressure). The
table shows the completed checkpoints' duration p50/p90/max (trigger to last acknowledgement,
from the JobMaster's console line) and the rows/s, with cuts and without; the last line is the
issue's target (unaligned checkpoint p50 <= 20 ms on the batch job under backpressure).

``--probe`` also prints where the checkpoints with cuts spent their time, hop by hop
(:mod:`checkpoint_hops`).

Usage: ``python benchmarks/columnar_cuts.py [--rows 400000] [--batch-rows 20000] [--row-us 25]
[--interval-ms 100] [--probe]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from typing import Any

import checkpoint_hops
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from unaligned import COMPLETED, execute

from undertow.common import Configuration
from undertow.datastream import (
    BatchValueStateDescriptor,
    KeyedBatchProcessFunction,
    StreamExecutionEnvironment,
)
from undertow.datastream.connectors import DiscardingSink
from undertow.datastream.connectors.number_seq_batches import NumberSequenceBatchSource
from undertow.runtime.task.batch_process import BatchProcessOperator

COUNT = BatchValueStateDescriptor("count", pa.int64())


class SlowCount(KeyedBatchProcessFunction):
    def __init__(self, row_s: float) -> None:
        self.row_s = row_s

    def process_batch(self, batch: pa.RecordBatch, ctx: Any) -> None:
        time.sleep(batch.num_rows * self.row_s)
        state = ctx.get_state(COUNT)
        seen = np.bincount(ctx.key_index(), minlength=ctx.keys().num_rows)
        state.update(pc.add(pc.fill_null(state.value(), 0), pa.array(seen, pa.int64())))


def run(
    rows: int, batch_rows: int, row_s: float, cuts: bool, interval_ms: int = 100
) -> tuple[list[int], float]:
    """Checkpoint durations (ms) and rows/s of one run."""
    BatchProcessOperator.takes_row_ranges = cuts
    with tempfile.TemporaryDirectory() as directory:
        env = StreamExecutionEnvironment.get_execution_environment(Configuration({
            "execution.target": "local-threads", "rest.port": "-1",
            "execution.checkpointing.interval": f"{interval_ms} ms",
            "execution.checkpointing.unaligned.enabled": "true",
            "execution.checkpointing.dir": os.path.join(directory, "checkpoints"),
        }))  # fmt: skip
        env.set_parallelism(2)
        source = NumberSequenceBatchSource(0, rows - 1, batch_rows=batch_rows)
        numbers = env.from_source(source, None, "numbers").as_batches()
        keyed = numbers.map_batches(lambda b: pa.record_batch({"k": pc.remainder(b[0], 8)}))
        keyed.key_by("k").process_batches(SlowCount(row_s)).sink_to(DiscardingSink())
        elapsed, console, _ = execute(env, f"cuts {'on' if cuts else 'off'}")
    return [int(m["ms"]) for m in COMPLETED.finditer(console)], rows / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=400_000)
    parser.add_argument("--batch-rows", type=int, default=20_000)
    parser.add_argument("--row-us", type=float, default=25.0)
    parser.add_argument("--interval-ms", type=int, default=100, help="checkpoint interval")
    parser.add_argument("--probe", action="store_true", help="print the hops of a checkpoint")
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.1f}")
    print(
        f"{'row cuts':<10}{'checkpoints':>12}{'p50 ms':>9}{'p90 ms':>9}{'max ms':>9}{'rows/s':>10}"
    )
    p50 = {}
    for cuts in (True, False):
        if args.probe and cuts:
            checkpoint_hops.install()
        try:
            durations, rate = run(
                args.rows, args.batch_rows, args.row_us / 1e6, cuts, args.interval_ms
            )
        finally:
            checkpoint_hops.uninstall()
        if not durations:
            print(f"{'on' if cuts else 'off':<10}{0:>12}")
            continue
        p50[cuts] = statistics.median(durations)
        p90 = (
            statistics.quantiles(durations, n=10, method="inclusive")[-1]
            if len(durations) > 1
            else durations[0]
        )
        print(f"{'on' if cuts else 'off':<10}{len(durations):>12}{p50[cuts]:>9.0f}{p90:>9.0f}"
              f"{max(durations):>9}{rate:>10.0f}")  # fmt: skip
    print(f"load average at end: {os.getloadavg()[0]:.1f}")
    if args.probe:
        print(checkpoint_hops.table())
    if True in p50:
        met = "met" if p50[True] <= 20 else "missed"
        print(f"target unaligned-p50-with-row-cuts: {p50[True]:.0f} ms (goal 20 ms): {met}")


if __name__ == "__main__":
    main()
