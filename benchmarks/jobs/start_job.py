"""The job that benchmarks/spark_start.py starts with ``undertow run``: an endless keyed count
with checkpoints every 200 ms. The first record each attempt processes prints one line to
stderr (``FIRST_RECORD attempt=N t=UNIX_TIME``), so the benchmark can time start-up and
recovery from outside."""

from __future__ import annotations

import sys
import time
from typing import Any

from undertow.common import WatermarkStrategy
from undertow.datastream import MapFunction, RuntimeContext, StreamExecutionEnvironment
from undertow.datastream.connectors import DataGeneratorSource, DiscardingSink


class FirstRecord(MapFunction):
    def open(self, runtime_context: RuntimeContext) -> None:
        self.attempt = runtime_context.get_attempt_number()
        self.subtask = runtime_context.get_index_of_this_subtask()
        self.seen = False

    def map(self, value: Any) -> Any:
        if not self.seen and self.subtask == 0:
            self.seen = True
            sys.stderr.write(f"FIRST_RECORD attempt={self.attempt} t={time.time():.3f}\n")
            sys.stderr.flush()
        return value


def main() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    env.enable_checkpointing(200)
    source = DataGeneratorSource(lambda i: (i % 100, 1), count=10**12, records_per_second=20_000)
    (
        env.from_source(source, WatermarkStrategy.no_watermarks(), "numbers")
        .key_by(lambda pair: pair[0])
        .sum(1)
        .map(FirstRecord())
        .sink_to(DiscardingSink())
    )
    env.execute("start-up benchmark")


if __name__ == "__main__":
    main()
