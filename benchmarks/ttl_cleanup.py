"""State TTL over keys that never come back: does the state level off, on either backend?

Two job shapes, each into a ``KeyedProcessFunction`` with a TTL state (TTL ``--ttl-ms``), then
a discarding sink, on the ``local-threads`` target (the workers are threads of the measuring
process), p=2, no checkpoints, so nothing but the TTL cleanup can drop an expired entry:

* ``sessions``: ``N`` records, each of a key never seen before (``session-<i>``), reading and
  writing a ``ValueState`` once;
* ``lists``: ``N`` records over ``--keys`` keys, each adding to the key's ``ListState`` (an
  event buffer; every element expires on its own).

Each variant runs in a process of its own, twice over: with PyFlink's default TTL config
(cleanup in the background: ``undertow.state.heap_ttl_cleanup`` on ``--backend heap``, 5
entries an access; ``undertow.state.rocksdb_ttl_cleanup`` on ``--backend rocksdb``, 1,000
entries a walk) and with ``disable_cleanup_in_background()``, the peer in the same run. The
figures: on the heap, the growth of the process's anonymous resident memory (``RssAnon``)
from before the job to its end; on RocksDB, the DB's live content when the job ends (the
entries and bytes of the state's column family, read before the backend is disposed: what
the cleanup controls; the DB's files and memtables hold it plus old versions until a flush or
a compaction, and memtables are sized by configuration, not by the state). Both with the
records a second. The targets are ours (no issue sets them): with the cleanup, the state
grows by at most half as much, at 0.9x the speed or better.

``--countdown`` measures instead what every RocksDB state operation pays for the cleanup,
TTL or not: the countdown to the next walk (a decrement and a test; states without TTL count
down once and then never reach 0), timed in a loop against the same loop without it, and
set against a ``value()`` of a RocksDB value state without TTL timed in the same run (median
of five). Target: at most 2% of that read.

A short run holds all of RocksDB's state in one memtable of Flink's default size (64 MiB)
when nothing deletes; a job that runs for hours does not: ``--write-buffer-mib`` (for both
variants) puts a short run in that regime of flushes and compactions.

Usage: ``python benchmarks/ttl_cleanup.py [--backend heap|rocksdb] [--shape sessions|lists]
[--records N] [--keys K] [--ttl-ms MS] [--write-buffer-mib MIB] [--variant NAME]``,
``python benchmarks/ttl_cleanup.py --countdown``
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
from undertow.datastream.state import ListStateDescriptor, StateTtlConfig, ValueStateDescriptor

#: The name of the measured state.
STATE = "seen"


class Session(KeyedProcessFunction):
    def __init__(self, ttl_ms: int, cleanup: bool, shape: str) -> None:
        self.ttl_ms, self.cleanup, self.shape = ttl_ms, cleanup, shape

    def open(self, runtime_context: RuntimeContext) -> None:
        ttl = StateTtlConfig.new_builder(self.ttl_ms)
        if not self.cleanup:
            ttl.disable_cleanup_in_background()
        if self.shape == "lists":
            descriptor: Any = ListStateDescriptor(STATE, Types.LONG())
            descriptor.enable_time_to_live(ttl.build())
            self.events = runtime_context.get_list_state(descriptor)
            return
        descriptor = ValueStateDescriptor(STATE, Types.LONG())
        descriptor.enable_time_to_live(ttl.build())
        self.seen = runtime_context.get_state(descriptor)

    def process_element(self, value: Any, ctx: Any) -> Any:
        if self.shape == "lists":
            self.events.add(value)
        else:
            self.seen.update((self.seen.value() or 0) + 1)
        return []


def rss_anon_mib() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no RssAnon in /proc/self/status")


def measure_db_at_dispose(found: list[tuple[int, int]]) -> None:
    """Each RocksDB backend (the job's one keyed operator, per subtask), before it is
    disposed at the job's end, adds the entries and bytes of :data:`STATE`'s column family
    to ``found``."""
    from undertow.state.rocksdb import RocksDBKeyedStateBackend

    dispose = RocksDBKeyedStateBackend.dispose

    def measured(backend: RocksDBKeyedStateBackend) -> None:
        column: Any = backend.column(STATE)  # raw mode: values are bytes
        sizes = [len(raw) for raw in column.values()]
        found.append((len(sizes), sum(sizes)))
        dispose(backend)

    RocksDBKeyedStateBackend.dispose = measured  # type: ignore[method-assign]


def run(records: int, ttl_ms: int, cleanup: bool, backend: str, shape: str, keys: int,
        write_buffer_mib: int) -> dict[str, float]:  # fmt: skip
    env = StreamExecutionEnvironment.get_execution_environment(Configuration({
        "execution.target": "local-threads", "rest.port": "-1",
        "state.backend.type": "rocksdb" if backend == "rocksdb" else "hashmap",
        "state.backend.rocksdb.writebuffer.size": str(write_buffer_mib * 2**20),
    }))  # fmt: skip
    env.set_parallelism(2)
    found: list[tuple[int, int]] = []
    if backend == "rocksdb":
        measure_db_at_dispose(found)
    numbers = env.from_source(NumberSequenceSource(0, records - 1), None, "numbers")
    key = (lambda i: f"session-{i}") if shape == "sessions" else (lambda i: f"key-{i % keys}")
    numbers.key_by(key).process(Session(ttl_ms, cleanup, shape)).sink_to(DiscardingSink())
    before = rss_anon_mib()
    start = time.perf_counter()
    env.execute("ttl cleanup")
    seconds = time.perf_counter() - start
    result = {"growth_mib": rss_anon_mib() - before, "records_s": records / seconds}
    if backend == "rocksdb":
        result["entries"] = sum(n for n, _ in found)
        result["db_mib"] = sum(b for _, b in found) / 2**20
    return result


def countdown(n: int = 1_000_000) -> None:
    """The ``--countdown`` figures (the module docstring)."""
    import statistics
    import tempfile

    from undertow.state.rocksdb import RocksDBKeyedStateBackend

    backend = RocksDBKeyedStateBackend("op", 128, range(128), lambda: 0,
                                       local_dir=tempfile.mkdtemp())  # fmt: skip
    state: Any = backend.get_partitioned_state(ValueStateDescriptor("v", Types.LONG()))
    backend.set_current_key(1)
    state.update(1)

    def counting() -> float:
        start = time.perf_counter()
        for _ in range(n):
            state._until_sweep -= 1  # as RocksDBState._run does
            if not state._until_sweep:
                state._count_down()
        return time.perf_counter() - start

    def bare() -> float:
        start = time.perf_counter()
        for _ in range(n):
            pass
        return time.perf_counter() - start

    def reads() -> float:
        value = state.value
        start = time.perf_counter()
        for _ in range(n // 10):
            value()
        return (time.perf_counter() - start) * 10

    rounds = [(counting(), bare(), reads()) for _ in range(5)]
    backend.dispose()
    cost = statistics.median(c - b for c, b, _ in rounds) / n * 1e9
    read = statistics.median(r for _, _, r in rounds) / n * 1e9
    share = cost / read
    print(f"countdown: {cost:.1f} ns an operation; a RocksDB value() without TTL: {read:,.0f} ns")
    print(f"target rocksdb-ttl-countdown: {share:.1%} of a RocksDB read (goal <= 2%): "
          f"{'met' if share <= 0.02 else 'missed'}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["heap", "rocksdb"], default="heap")
    parser.add_argument("--shape", choices=["sessions", "lists"], default="sessions")
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=1_000, help="keys of the lists shape")
    parser.add_argument("--ttl-ms", type=int, default=200)
    parser.add_argument("--write-buffer-mib", type=int, default=64,
                        help="RocksDB memtable size (Flink's default: 64)")  # fmt: skip
    parser.add_argument("--variant", choices=["cleanup", "no-cleanup"])
    parser.add_argument("--countdown", action="store_true",
                        help="the countdown's cost on every RocksDB state operation")  # fmt: skip
    args = parser.parse_args()
    if args.countdown:
        countdown()
        return
    if args.variant:
        cleanup = args.variant == "cleanup"
        print(json.dumps(run(args.records, args.ttl_ms, cleanup, args.backend, args.shape,
                             args.keys, args.write_buffer_mib)))  # fmt: skip
        return
    rocksdb = args.backend == "rocksdb"
    results = {}
    for variant in ("cleanup", "no-cleanup"):
        out = subprocess.run(
            [sys.executable, __file__, "--variant", variant, "--records", str(args.records),
             "--ttl-ms", str(args.ttl_ms), "--backend", args.backend, "--shape", args.shape,
             "--keys", str(args.keys), "--write-buffer-mib", str(args.write_buffer_mib)],
            check=True, capture_output=True, text=True,
        )  # fmt: skip
        results[variant] = r = json.loads(out.stdout.strip().splitlines()[-1])
        what = "new keys" if args.shape == "sessions" else f"adds over {args.keys:,} keys"
        state = (f"DB {r['entries']:,} entries, {r['db_mib']:.2f} MiB" if rocksdb
                 else f"memory +{r['growth_mib']:.1f} MiB")  # fmt: skip
        print(f"{variant:>10}: {args.backend} {args.records:,} {what}, TTL {args.ttl_ms} ms: "
              f"{state}, {r['records_s']:,.0f} records/s")  # fmt: skip
    on, off = results["cleanup"], results["no-cleanup"]
    prefix = "ttl" if args.backend == "heap" else "rocksdb-ttl"
    prefix += "" if args.shape == "sessions" else "-lists"
    if rocksdb:
        size = on["db_mib"] / max(off["db_mib"], 1e-6)
        print(f"target {prefix}-db: live bytes {size:.2f}x of without the cleanup "
              f"(goal <= 0.5x): {'met' if size <= 0.5 else 'missed'}")  # fmt: skip
    else:
        memory = on["growth_mib"] / max(off["growth_mib"], 0.1)
        print(f"target {prefix}-memory: growth {memory:.2f}x of without the cleanup "
              f"(goal <= 0.5x): {'met' if memory <= 0.5 else 'missed'}")  # fmt: skip
    speed = on["records_s"] / off["records_s"]
    print(f"target {prefix}-throughput: {speed:.2f}x the records/s without the cleanup "
          f"(goal >= 0.9x): {'met' if speed >= 0.9 else 'missed'}")  # fmt: skip


if __name__ == "__main__":
    main()
