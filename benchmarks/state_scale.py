"""Keyed state at scale, heap vs RocksDB, on the ``local`` target (issue 15's table).

The job is generator -> key_by -> sum -> discard at parallelism 2 with a checkpoint every 1 s.
The generator first gives every key 0..N-1 one record, then only the 1,000 hot keys 0..999.
Once the state is filled (three consecutive checkpoints within 0.2 % of each other in size), the
next ``--samples`` completed checkpoints are read from the coordinator: their duration p50
(trigger to completion) and size; the worker processes' resident set size (VmRSS, summed over
the workers) is read at the same time. Every row runs its own job, one after another.

The baseline in the same run is the heap backend's full snapshot (HashMapStateBackend);
RocksDB (EmbeddedRocksDBStateBackend) writes full, canonical snapshots too: incremental
checkpoints are not implemented yet. ``fill s`` is submission to the filled state (detected up
to three checkpoints late), a coarse keyed-throughput figure (N / fill s).

Usage: ``python benchmarks/state_scale.py [--keys 500000,2000000,8000000] [--samples 5]
[--backends hashmap,rocksdb]``
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


def run(backend: str, keys: int, samples: int) -> dict[str, Any]:
    workdir = tempfile.mkdtemp(prefix="undertow-state-scale-")
    try:
        env = StreamExecutionEnvironment.get_execution_environment(
            Configuration({
                "execution.target": "local",
                "execution.checkpointing.interval": "1 s",
                "execution.checkpointing.dir": os.path.join(workdir, "checkpoints"),
                "state.backend.type": backend,
                "state.backend.rocksdb.localdir": os.path.join(workdir, "rocksdb"),
                "restart-strategy.type": "none",
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
        coordinator = client._master.coordinator
        assert coordinator is not None
        deadline = time.monotonic() + TIMEOUT_S
        filled_at = None
        rss: list[int] = []
        try:
            while time.monotonic() < deadline:
                time.sleep(0.25)
                if client.get_job_status().is_globally_terminal_state():
                    raise RuntimeError(f"{backend}, {keys:,} keys: the job ended early")
                stats = list(coordinator.stats)
                if filled_at is None and len(stats) >= 3:
                    sizes = [s.state_size for s in stats[-3:]]
                    if sizes[0] > 0 and max(sizes) - min(sizes) <= 0.002 * sizes[0]:
                        filled_at = len(stats)
                        fill_s = time.perf_counter() - submitted
                if filled_at is not None:
                    rss.append(worker_rss_bytes())
                    if len(stats) >= filled_at + samples:
                        break
            else:
                raise TimeoutError(f"{backend}, {keys:,} keys: not filled within {TIMEOUT_S} s")
        finally:
            client.cancel()
        measured = list(coordinator.stats)[filled_at : filled_at + samples]  # type: ignore[misc]
        return {
            "backend": backend,
            "keys": keys,
            "p50_ms": statistics.median(s.duration_ms for s in measured),
            "size": statistics.median(s.state_size for s in measured),
            "rss": max(rss),
            "fill_s": fill_s,
        }
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--keys", default="500000,2000000,8000000")
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--backends", default="hashmap,rocksdb")
    args = parser.parse_args()
    backends = args.backends.split(",")
    print(f"{'backend':<10}{'keys':>12}{'ckpt p50 ms':>13}{'size MiB':>10}{'worker RSS MiB':>16}"
          f"{'fill s':>8}{'keys/s':>10}")  # fmt: skip
    for keys in (int(k) for k in args.keys.split(",")):
        for backend in backends:
            r = run(backend, keys, args.samples)
            print(f"{r['backend']:<10}{r['keys']:>12,}{r['p50_ms']:>13,.0f}"
                  f"{r['size'] / 2**20:>10.1f}{r['rss'] / 2**20:>16,.0f}{r['fill_s']:>8.1f}"
                  f"{r['keys'] / r['fill_s']:>10,.0f}", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
