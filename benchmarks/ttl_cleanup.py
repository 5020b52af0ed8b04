"""State TTL over keys that never come back: does the heap backend's memory level off?

The job is the shape of session state: ``N`` records, each of a key never seen before
(``session-<i>``), into a ``KeyedProcessFunction`` that keeps a TTL ``ValueState`` per key
(TTL ``--ttl-ms``) and reads and writes it once; then a discarding sink. Run on the
``local-threads`` target (the workers are threads of the measuring process), p=2, no
checkpoints, so nothing but the TTL cleanup can drop an expired entry.

Each variant runs in a process of its own, twice over: with PyFlink's default TTL config
(incremental cleanup in the background, 5 entries an access: ``undertow.state.heap_ttl_cleanup``)
and with ``disable_cleanup_in_background()``, the peer in the same run: the same engine without
the cleanup. The figures are the growth of the process's anonymous resident memory
(``RssAnon``) from before the job to its end, and the records a second. The targets are ours
(no issue sets them): with the cleanup, memory grows by at most half as much, at 0.9x the
speed or better.

Usage: ``python benchmarks/ttl_cleanup.py [--records N] [--ttl-ms MS] [--variant NAME]``
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from typing import Any

from undertow.common import Configuration, Types
from undertow.datastream import KeyedProcessFunction, RuntimeContext, StreamExecutionEnvironment
from undertow.datastream.connectors import DiscardingSink
from undertow.datastream.connectors.number_seq import NumberSequenceSource
from undertow.datastream.state import StateTtlConfig, ValueStateDescriptor


class Session(KeyedProcessFunction):
    def __init__(self, ttl_ms: int, cleanup: bool) -> None:
        self.ttl_ms, self.cleanup = ttl_ms, cleanup

    def open(self, runtime_context: RuntimeContext) -> None:
        ttl = StateTtlConfig.new_builder(self.ttl_ms)
        if not self.cleanup:
            ttl.disable_cleanup_in_background()
        descriptor = ValueStateDescriptor("seen", Types.LONG())
        descriptor.enable_time_to_live(ttl.build())
        self.seen = runtime_context.get_state(descriptor)

    def process_element(self, value: Any, ctx: Any) -> Any:
        self.seen.update((self.seen.value() or 0) + 1)
        return []


def rss_anon_mib() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no RssAnon in /proc/self/status")


def run(records: int, ttl_ms: int, cleanup: bool) -> dict[str, float]:
    env = StreamExecutionEnvironment.get_execution_environment(Configuration({
        "execution.target": "local-threads", "rest.port": "-1",
    }))  # fmt: skip
    env.set_parallelism(2)
    numbers = env.from_source(NumberSequenceSource(0, records - 1), None, "numbers")
    (numbers.key_by(lambda i: f"session-{i}")
     .process(Session(ttl_ms, cleanup)).sink_to(DiscardingSink()))  # fmt: skip
    before = rss_anon_mib()
    start = time.perf_counter()
    env.execute("ttl cleanup")
    seconds = time.perf_counter() - start
    return {"growth_mib": rss_anon_mib() - before, "records_s": records / seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--ttl-ms", type=int, default=200)
    parser.add_argument("--variant", choices=["cleanup", "no-cleanup"])
    args = parser.parse_args()
    if args.variant:
        print(json.dumps(run(args.records, args.ttl_ms, args.variant == "cleanup")))
        return
    results = {}
    for variant in ("cleanup", "no-cleanup"):
        out = subprocess.run(
            [sys.executable, __file__, "--variant", variant, "--records", str(args.records),
             "--ttl-ms", str(args.ttl_ms)],
            check=True, capture_output=True, text=True,
        )  # fmt: skip
        results[variant] = json.loads(out.stdout.strip().splitlines()[-1])
        growth, rate = results[variant]["growth_mib"], results[variant]["records_s"]
        print(f"{variant:>10}: {args.records:,} new keys, TTL {args.ttl_ms} ms: memory "
              f"+{growth:.1f} MiB, {rate:,.0f} records/s")  # fmt: skip
    on, off = results["cleanup"], results["no-cleanup"]
    memory = on["growth_mib"] / max(off["growth_mib"], 0.1)
    speed = on["records_s"] / off["records_s"]
    print(f"target ttl-memory: growth {memory:.2f}x of without the cleanup (goal <= 0.5x): "
          f"{'met' if memory <= 0.5 else 'missed'}")  # fmt: skip
    print(f"target ttl-throughput: {speed:.2f}x the records/s without the cleanup "
          f"(goal >= 0.9x): {'met' if speed >= 0.9 else 'missed'}")  # fmt: skip


if __name__ == "__main__":
    main()
