"""Keyed state at scale, heap vs RocksDB full vs RocksDB incremental, on the ``local`` target
(issue 15's table).

The job is generator -> key_by -> sum -> discard at parallelism 2 with a checkpoint every 1 s.
The generator first gives every key 0..N-1 one record, then only the 1,000 hot keys 0..999.
Once the state is filled (the keyed operator received N records, from the task metrics), the
next ``--samples`` checkpoints triggered after that are read from the checkpoint statistics:
their duration p50 (trigger to completion), the full state size, the bytes this checkpoint
wrote (Flink's checkpointed size: for incremental ones, the new SST files and the private
files) and the slowest subtask's synchronous and asynchronous parts (p50); the worker
processes' resident set size (VmRSS, summed over the workers) is read at the same time.
Every row runs its own job, one after another.

Backends: ``hashmap`` (the full-snapshot baseline), ``rocksdb`` (full, canonical snapshots),
``rocksdb-incremental`` (``execution.checkpointing.incremental: true``) and
``hashmap-incremental`` (the same option on the heap backend, 32,768 key groups). ``fill s`` is
submission to the filled state, a coarse keyed-throughput figure (N / fill s).

Usage: ``python benchmarks/state_scale.py [--keys 500000,2000000,8000000] [--samples 5]
[--backends hashmap,hashmap-incremental,rocksdb,rocksdb-incremental]``
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from typing import Any

from undertow.common import Configuration, WatermarkStrategy
from undertow.datastream import StreamExecutionEnvironment
from undertow.datastream.connectors import DataGeneratorSource, DiscardingSink
from undertow.runtime.cluster.checkpoint_stats import CheckpointStatus

HOT_KEYS = 1_000
TIMEOUT_S = 900.0


def worker_rss_bytes() -> int:
    """VmRSS summed over this machine's undertow worker processes."""
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if b"undertow.deploy.worker_process" not in f.read():
                    continue
            with open(f"/proc/{entry}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
        except OSError:
            continue
    return total


def heap_incremental_options(backend: str) -> dict[str, str]:
    """``hashmap-incremental``: heap incremental checkpoints rewrite whole key groups, so the
    row runs with Flink's largest key-group count (32,768): 1,000 hot keys then dirty about
    3 % of a subtask's key groups, not all 128 of the default."""
    return {"pipeline.max-parallelism": "32768"} if backend == "hashmap-incremental" else {}


def run(backend: str, keys: int, samples: int) -> dict[str, Any]:
    workdir = tempfile.mkdtemp(prefix="undertow-state-scale-")
    try:
        env = StreamExecutionEnvironment.get_execution_environment(
            Configuration({
                "execution.target": "local",
                "execution.checkpointing.interval": "1 s",
                "execution.checkpointing.dir": os.path.join(workdir, "checkpoints"),
                "state.backend.type": backend.split("-")[0],
                "execution.checkpointing.incremental": str(backend.endswith("incremental")),
                "state.backend.rocksdb.localdir": os.path.join(workdir, "rocksdb"),
                "restart-strategy.type": "none",
                **heap_incremental_options(backend),
            })
        )  # fmt: skip
        env.set_parallelism(2)
        # record i: (i, 1) for the first ``keys`` records, then (i % 1000, 1): hot keys only
        source = DataGeneratorSource(lambda i: (i if i < keys else i % HOT_KEYS, 1), count=None)
        (
            env.from_source(source, WatermarkStrategy.no_watermarks(), "generator")
            .key_by(lambda t: t[0])
            .sum(1)
            .sink_to(DiscardingSink())
        )
        submitted = time.perf_counter()
        client = env.execute_async(f"state scale {backend} {keys}")
        master: Any = client._master
        [keyed] = [v for v in master.job_graph.vertices if not v.is_source]  # sum -> discard
        deadline = time.monotonic() + TIMEOUT_S
        filled_ms: int | None = None
        rss: list[int] = []
        measured: list[Any] = []
        try:
            while time.monotonic() < deadline:
                time.sleep(0.25)
                if client.get_job_status().is_globally_terminal_state():
                    raise RuntimeError(f"{backend}, {keys:,} keys: the job ended early")
                if filled_ms is None:
                    views = [master.task_metrics.view(keyed.id, s) for s in range(2)]
                    if sum(v.records_in for v in views if v is not None) >= keys:
                        filled_ms = int(time.time() * 1000)
                        fill_s = time.perf_counter() - submitted
                    continue
                rss.append(worker_rss_bytes())
                history = master.checkpoint_stats.snapshot().history
                measured = [e for e in history if e.status is CheckpointStatus.COMPLETED
                            and not e.is_savepoint and e.trigger_timestamp > filled_ms]  # fmt: skip
                if len(measured) >= samples:
                    break
            else:
                raise TimeoutError(f"{backend}, {keys:,} keys: not measured within {TIMEOUT_S} s")
        finally:
            client.cancel()
        return {
            "backend": backend,
            "keys": keys,
            "p50_ms": statistics.median(
                e.completion_timestamp - e.trigger_timestamp for e in measured
            ),
            "size": statistics.median(sum(a.state_size for a in e.acks()) for e in measured),
            "written": statistics.median(
                sum(a.checkpointed_size for a in e.acks()) for e in measured
            ),
            "sync_ms": statistics.median(
                max(a.sync_duration_ms for a in e.acks()) for e in measured
            ),
            "async_ms": statistics.median(
                max(a.async_duration_ms for a in e.acks()) for e in measured
            ),
            "rss": max(rss),
            "fill_s": fill_s,
        }
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--keys", default="500000,2000000,8000000")
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument(
        "--backends", default="hashmap,hashmap-incremental,rocksdb,rocksdb-incremental"
    )
    args = parser.parse_args()
    backends = args.backends.split(",")
    print(f"{'backend':<21}{'keys':>12}{'ckpt p50 ms':>13}{'full MiB':>10}{'written MiB':>13}"
          f"{'sync ms':>9}{'async ms':>10}{'worker RSS MiB':>16}{'fill s':>8}"
          f"{'keys/s':>10}")  # fmt: skip
    for keys in (int(k) for k in args.keys.split(",")):
        for backend in backends:
            r = run(backend, keys, args.samples)
            print(f"{r['backend']:<21}{r['keys']:>12,}{r['p50_ms']:>13,.0f}"
                  f"{r['size'] / 2**20:>10.1f}{r['written'] / 2**20:>13.2f}"
                  f"{r['sync_ms']:>9,.0f}{r['async_ms']:>10,.0f}"
                  f"{r['rss'] / 2**20:>16,.0f}{r['fill_s']:>8.1f}"
                  f"{r['keys'] / r['fill_s']:>10,.0f}", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
