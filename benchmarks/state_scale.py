"""Keyed state at scale, heap vs RocksDB full vs RocksDB incremental, on the ``local`` target
(issue 15's table).

The job is generator -> key_by -> sum -> discard at parallelism 2 with a checkpoint every 1 s.
The generator first gives every key 0..N-1 one record, then only the 1,000 hot keys 0..999.
Once the state is filled (the keyed operator received N records, from the task metrics), the
next ``--samples`` checkpoints triggered after that are read from the checkpoint statistics:
their duration p50 (trigger to completion), the full state size, the bytes this checkpoint
wrote (Flink's checkpointed size: for incremental ones, the new SST files and the private
files), the barrier's way (the slowest subtask's start delay plus alignment: time spent behind
backpressure, not state work) and the slowest subtask's synchronous and asynchronous parts
(p50); the worker processes' resident set size (VmRSS, summed over the workers) is read at the
same time.
Every row runs its own job, one after another.

Backends: ``hashmap`` (the full-snapshot baseline), ``rocksdb`` (full, canonical snapshots),
``rocksdb-incremental`` (``execution.checkpointing.incremental: true``) and
``hashmap-incremental`` (the same option on the heap backend, 32,768 key groups). ``fill s`` is
submission to the filled state, a coarse keyed-throughput figure (N / fill s). ``hot rec/s``
is the keyed operator's input rate while the samples are taken (hot keys only, state full);
``x heap``: that rate over the ``hashmap`` row's of the same size (run ``hashmap`` first).
``restore s`` (``--restore``): the checkpoint is retained, the job cancelled and a second job
restored from it; the JobMaster's restore line (deployment sent -> every worker read and
verified its state files, downloads included) gives the time. ``to chk s``: submission of the
restored job -> its first completed checkpoint, an upper bound of the whole restore (state
applied to the backends, tasks running) that includes up to one checkpoint interval.

Usage: ``python benchmarks/state_scale.py [--keys 500000,2000000,8000000] [--samples 5]
[--backends hashmap,hashmap-incremental,rocksdb,rocksdb-incremental] [--restore]
[--trace-rss S]``
"""

from __future__ import annotations

import argparse
import io
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from undertow.common import Configuration, WatermarkStrategy
from undertow.datastream import StreamExecutionEnvironment
from undertow.datastream.connectors import DataGeneratorSource, DiscardingSink
from undertow.runtime.master.checkpoint_stats import CheckpointStatus
from undertow.storage import CheckpointStorage
from undertow.testing.oracle import worker_process_pids

sys.path.insert(0, str(Path(__file__).resolve().parent))
from process_cpu import rss_bytes

HOT_KEYS = 1_000
TIMEOUT_S = 900.0


def worker_rss_bytes() -> int:
    """VmRSS summed over this process's worker processes (forked ones included: the testing
    kit finds them by name; a scan for the worker module's command line found none)."""
    return sum(rss_bytes(pid) for pid in worker_process_pids())


def heap_incremental_options(backend: str) -> dict[str, str]:
    """``hashmap-incremental``: heap incremental checkpoints rewrite whole key groups, so the
    row runs with Flink's largest key-group count (32,768): 1,000 hot keys then dirty about
    3 % of a subtask's key groups, not all 128 of the default."""
    return {"pipeline.max-parallelism": "32768"} if backend == "hashmap-incremental" else {}


def _env(backend: str, keys: int, workdir: str, **extra: str) -> StreamExecutionEnvironment:
    """The job of one row on a fresh environment (``extra``: more options)."""
    env = StreamExecutionEnvironment.get_execution_environment(
        Configuration({
            "execution.target": "local",
            "execution.checkpointing.interval": "1 s",
            "execution.checkpointing.dir": os.path.join(workdir, "checkpoints"),
            "state.backend.type": backend.split("-")[0],
            "execution.checkpointing.incremental": str(backend.endswith("incremental")),
            "state.backend.rocksdb.localdir": os.path.join(workdir, "rocksdb"),
            "restart-strategy.type": "none",
            # measured (README) with debloating off, as it was by default then
            "taskmanager.network.memory.buffer-debloat.enabled": "false",
            **heap_incremental_options(backend),
            **extra,
        })
    )  # fmt: skip
    env.set_parallelism(2)
    # record i: (i, 1) for the first ``keys`` records, then (i % 1000, 1): hot keys only
    source = DataGeneratorSource(lambda i: (i if i < keys else i % HOT_KEYS, 1), count=None)
    (
        env.from_source(source, WatermarkStrategy.no_watermarks(), "generator").uid("generator")
        .key_by(lambda t: t[0])
        .sum(1).uid("sum")
        .sink_to(DiscardingSink()).uid("discard")
    )  # fmt: skip
    return env


RESTORED = re.compile(r"restored from checkpoint (\d+) .* in (\d+) ms")
COMPLETED = re.compile(r"checkpoint \d+ completed")


class _Tee(io.TextIOBase):
    """Stderr that also keeps what is written (the JobMaster's console lines)."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.text = inner, io.StringIO()

    def write(self, data: str) -> int:
        self.text.write(data)
        return int(self.inner.write(data))

    def flush(self) -> None:
        self.inner.flush()


def restore_seconds(backend: str, keys: int, workdir: str, job_id: str) -> tuple[float, float]:
    """Restore the cancelled job's latest retained checkpoint in a second job: the seconds of
    its restore line, and from submission to its first completed checkpoint."""
    storage = CheckpointStorage(os.path.join(workdir, "checkpoints"), job_id)
    pointer = storage.checkpoint_pointer(max(storage.completed_checkpoint_ids()))
    env = _env(backend, keys, workdir, **{"execution.state-recovery.path": pointer})
    tee = _Tee(sys.stderr)
    sys.stderr = tee
    try:
        submitted = time.perf_counter()
        client = env.execute_async(f"state scale {backend} {keys} restore")
        try:
            deadline = time.monotonic() + TIMEOUT_S
            while (found := RESTORED.search(tee.text.getvalue())) is None or (
                COMPLETED.search(tee.text.getvalue(), found.end()) is None
            ):
                if client.get_job_status().result().is_globally_terminal_state():
                    raise RuntimeError(f"{backend}, {keys:,} keys: the restored job ended")
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{backend}, {keys:,} keys: no restore in {TIMEOUT_S} s")
                time.sleep(0.1)
        finally:
            to_checkpoint = time.perf_counter() - submitted
            client.cancel()
    finally:
        sys.stderr = tee.inner
    return int(found.group(2)) / 1000, to_checkpoint


def run(
    backend: str, keys: int, samples: int, restore: bool = False, trace_rss_s: float = 0.0
) -> dict[str, Any]:
    workdir = tempfile.mkdtemp(prefix="undertow-state-scale-")
    try:
        retain = "RETAIN_ON_CANCELLATION" if restore else "DELETE_ON_CANCELLATION"
        env = _env(backend, keys, workdir, **{
            "execution.checkpointing.externalized-checkpoint-retention": retain})  # fmt: skip
        submitted = time.perf_counter()
        client = env.execute_async(f"state scale {backend} {keys}")
        master: Any = client._master
        [keyed] = [v for v in master.job_graph.vertices if not v.is_source]  # sum -> discard
        deadline = time.monotonic() + TIMEOUT_S
        filled_ms: int | None = None
        rss: list[int] = []
        traced = time.monotonic()
        measured: list[Any] = []
        try:
            while time.monotonic() < deadline:
                time.sleep(0.25)
                if client.get_job_status().result().is_globally_terminal_state():
                    raise RuntimeError(f"{backend}, {keys:,} keys: the job ended early")
                views = [master.task_metrics.view(keyed.id, s) for s in range(2)]
                records_in = sum(v.records_in for v in views if v is not None)
                if trace_rss_s and time.monotonic() - traced >= trace_rss_s:
                    traced = time.monotonic()
                    print(f"  {backend}: {records_in:,} records in, worker RSS "
                          f"{worker_rss_bytes() / 2**20:,.0f} MiB", flush=True)  # fmt: skip
                if filled_ms is None:
                    if records_in >= keys:
                        filled_ms = int(time.time() * 1000)
                        fill_s = time.perf_counter() - submitted
                        hot_from = (records_in, time.perf_counter())
                    continue
                hot_to = (records_in, time.perf_counter())
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
        restore_s = None
        if restore:
            while not client.get_job_status().result().is_globally_terminal_state():
                time.sleep(0.1)
            time.sleep(0.5)  # the JobMaster keeps the retained checkpoint as it shuts down
            restore_s = restore_seconds(backend, keys, workdir, client.get_job_id())
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
            "barrier_ms": statistics.median(
                max(a.start_delay_ms + a.alignment_duration_ms for a in e.acks()) for e in measured
            ),
            "rss": max(rss),
            "fill_s": fill_s,
            "hot_rate": (hot_to[0] - hot_from[0]) / max(hot_to[1] - hot_from[1], 1e-9),
            "restore_s": restore_s,
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
    parser.add_argument("--restore", action="store_true", help="also time a restore per row")
    parser.add_argument("--trace-rss", type=float, default=0.0, metavar="S",
                        help="print the records in and the worker RSS every S seconds")  # fmt: skip
    args = parser.parse_args()
    backends = args.backends.split(",")
    print(f"{'backend':<21}{'keys':>12}{'ckpt p50 ms':>13}{'full MiB':>10}{'written MiB':>13}"
          f"{'barrier ms':>12}{'sync ms':>9}{'async ms':>10}{'worker RSS MiB':>16}{'fill s':>8}"
          f"{'keys/s':>10}{'hot rec/s':>11}{'x heap':>8}{'restore s':>11}"
          f"{'to chk s':>10}")  # fmt: skip
    for keys in (int(k) for k in args.keys.split(",")):
        heap_rate = None
        for backend in backends:
            r = run(backend, keys, args.samples, args.restore, args.trace_rss)
            if backend == "hashmap":
                heap_rate = r["hot_rate"]
            ratio = f"{r['hot_rate'] / heap_rate:>8.2f}" if heap_rate else f"{'-':>8}"
            restored, to_chk = ("-", "-") if r["restore_s"] is None else (
                f"{r['restore_s'][0]:.1f}", f"{r['restore_s'][1]:.1f}")  # fmt: skip
            print(f"{r['backend']:<21}{r['keys']:>12,}{r['p50_ms']:>13,.0f}"
                  f"{r['size'] / 2**20:>10.1f}{r['written'] / 2**20:>13.2f}"
                  f"{r['barrier_ms']:>12,.0f}{r['sync_ms']:>9,.0f}{r['async_ms']:>10,.0f}"
                  f"{r['rss'] / 2**20:>16,.0f}{r['fill_s']:>8.1f}"
                  f"{r['keys'] / r['fill_s']:>10,.0f}{r['hot_rate']:>11,.0f}{ratio}"
                  f"{restored:>11}{to_chk:>10}", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
