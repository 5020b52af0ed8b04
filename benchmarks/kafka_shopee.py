"""Section 5 of benchmarks/kafka.py, Shopee's shape: a Kafka backlog read at once (bounded
source), a slow keyed running count (it spins a fixed time per record), checkpoints every
200 ms, p=2, aligned and then unaligned: checkpoint p50/p90 and in-flight bytes per checkpoint
(from the JobMaster's console lines, parsed as benchmarks/unaligned.py does)."""

from __future__ import annotations

import statistics
import tempfile
import time
import uuid

import kafka_load as load
import unaligned
from kafka_source import backlog_source

from undertow.common import Configuration, Types, WatermarkStrategy
from undertow.datastream import StreamExecutionEnvironment
from undertow.datastream.connectors import DiscardingSink


def shopee(bootstrap: str, seconds: float, spin_us: float) -> None:
    """Backlog -> parse -> key_by -> slow running count -> discard, checkpoints every 200 ms."""
    records = int(seconds * 2 / (spin_us / 1e6))
    topic = f"bench-backlog-{uuid.uuid4().hex[:8]}"
    load.create_topics(bootstrap, topic)
    load.fill(bootstrap, topic, records)
    spin = spin_us / 1e6
    print(f"{records:,} records backlog, slow keyed count spins {spin_us:g} us per record, "
          f"checkpoints every 200 ms, p=2, local target")  # fmt: skip
    print(f"{'mode':<12}{'checkpoints':>12}{'p50 ms':>9}{'p90 ms':>9}{'in-flight p50':>15}"
          f"{'in-flight max':>15}{'wall s':>8}")  # fmt: skip
    for mode in ("aligned", "unaligned"):
        with tempfile.TemporaryDirectory() as directory:
            settings = {"execution.target": "local", "rest.port": "-1",
                        "execution.checkpointing.dir": directory,
                        **unaligned.MODES[mode]}  # fmt: skip
            env = StreamExecutionEnvironment.get_execution_environment(Configuration(settings))
            env.set_parallelism(2)
            source = backlog_source(bootstrap, topic)

            def slow(a: tuple[str, int], b: tuple[str, int], spin: float = spin) -> tuple[str, int]:
                until = time.perf_counter() + spin
                while time.perf_counter() < until:
                    pass
                return a[0], a[1] + b[1]

            (
                env.from_source(source, WatermarkStrategy.no_watermarks(), "backlog")
                .map(
                    lambda v: (v.split(",", 1)[0], 1),
                    output_type=Types.TUPLE([Types.STRING(), Types.INT()]),
                )
                .key_by(lambda p: p[0])
                .reduce(slow)
                .name("slow count")
                .sink_to(DiscardingSink())
            )
            elapsed, console, _ = unaligned.execute(env, f"kafka shopee shape: {mode}")
        found = list(unaligned.COMPLETED.finditer(console))
        durations = [int(m.group("ms")) for m in found]
        sizes = [float(m.group("size")) * unaligned.UNITS[m.group("unit")]
                 for m in found if m.group("size")]  # fmt: skip
        if not durations:
            print(f"{mode:<12}{0:>12}  (no checkpoint completed in {elapsed:.1f} s)")
            continue
        p90 = statistics.quantiles(durations, n=10)[-1] if len(durations) > 1 else durations[0]
        in_p50 = f"{statistics.median(sizes) / 1024:,.0f} KiB" if sizes else "-"
        in_max = f"{max(sizes) / 1024:,.0f} KiB" if sizes else "-"
        print(f"{mode:<12}{len(durations):>12}{statistics.median(durations):>9.0f}{p90:>9.0f}"
              f"{in_p50:>15}{in_max:>15}{elapsed:>8.1f}", flush=True)  # fmt: skip
