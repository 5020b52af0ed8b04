"""The demo job (``make demo``): a keyed, backpressured pipeline with checkpoints, on local Spark.

numbers 1..N → (sensor, value) → key_by(sensor) → running total (reduce) → a deliberately slow
map (it backpressures everything upstream) → collected here. Checkpoints run every 300 ms while
the pipeline is backpressured. They are unaligned: barriers overtake the queued records, which
are stored with the checkpoint, so a checkpoint does not wait for the backlog to drain; each
completed one prints a line with its in-flight bytes. At the end the demo checks the last total
of every sensor against plain Python and prints a summary.

Run with ``make demo``, ``python examples/demo.py`` or ``undertow run examples/demo.py`` (add
``--master spark://HOST:7077`` for a cluster, ``--target local`` to run without Spark).
"""

from __future__ import annotations

import tempfile
import time
from typing import Any

from undertow.common import WatermarkStrategy
from undertow.datastream import StreamExecutionEnvironment
from undertow.datastream.connectors.number_seq import NumberSequenceSource
from undertow.datastream.functions import MapFunction

N = 300_000
SENSORS = 16


class SlowMap(MapFunction):
    """Sleeps 1 ms every 200 records: about 150 k records/s at most, slower than the source."""

    def __init__(self) -> None:
        self.seen = 0

    def map(self, value: Any) -> Any:
        self.seen += 1
        if self.seen % 200 == 0:
            time.sleep(0.001)
        return value


def main() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    env.enable_checkpointing(300)
    env.get_checkpoint_config().enable_unaligned_checkpoints()
    env.get_checkpoint_config().set_checkpoint_storage_dir(tempfile.mkdtemp(prefix="demo-chk-"))
    totals = (
        env.from_source(NumberSequenceSource(1, N), WatermarkStrategy.no_watermarks(), "numbers")
        .map(lambda n: (f"sensor-{n % SENSORS:02d}", n))
        .key_by(lambda reading: reading[0])
        .reduce(lambda a, b: (a[0], a[1] + b[1]))
        .map(SlowMap())
        .name("slow map")
    )
    started = time.perf_counter()
    last: dict[str, int] = {}
    updates = 0
    with totals.execute_and_collect("demo") as results:
        for sensor, total in results:
            last[sensor] = total
            updates += 1
    elapsed = time.perf_counter() - started
    expected = {f"sensor-{k:02d}": sum(range(k or SENSORS, N + 1, SENSORS)) for k in range(SENSORS)}
    verdict = "all correct" if last == expected else f"WRONG: {last} != {expected}"
    print(
        f"demo: {N:,} records, {updates:,} running totals over {len(last)} sensors in "
        f"{elapsed:.1f} s (Spark start included); final totals {verdict}"
    )
    if last != expected:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
