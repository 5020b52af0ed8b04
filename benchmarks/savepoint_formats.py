"""CANONICAL vs NATIVE savepoints of RocksDB state: time to take them, and time to restore them.

The job is generator -> key_by -> sum -> discard on ``local`` at parallelism 2, on RocksDB with
incremental checkpoints (no periodic checkpoint runs: only the savepoints write). The generator
gives every key 0..N-1 one record, then only 1,000 hot keys. Once the keyed operator received N
records, savepoints are taken one after another, alternating CANONICAL and NATIVE
(``--rounds`` each): each is timed from ``trigger_savepoint`` to its future's result, and its
directory's size is summed. Then, per format, a new job resumes from the last savepoint of
that format (NO_CLAIM, same parallelism): ``restore line`` is the JobMaster's restore line (the
workers downloaded and verified the files), ``first record`` is submission to the keyed
operator's first record (the backends restored their state, since that happens before the
operator opens; worker start-up is in it too, the same for both formats).

Usage: ``python benchmarks/savepoint_formats.py [--keys 1000000,2000000] [--rounds 2]``
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from typing import Any

from undertow.common import Configuration, SavepointFormatType, WatermarkStrategy
from undertow.datastream import StreamExecutionEnvironment
from undertow.datastream.connectors import DataGeneratorSource, DiscardingSink

HOT_KEYS = 1_000
TIMEOUT_S = 900.0
RESTORED = re.compile(r"restored from savepoint \d+ .* in (\d+) ms")


class _Tee(io.StringIO):
    """Keeps what is written to stderr and passes it on."""

    def write(self, text: str) -> int:
        sys.__stderr__.write(text)
        return super().write(text)


def _job(workdir: str, keys: int, restore_from: str | None) -> tuple[Any, Any, float]:
    config = {
        "execution.target": "local",
        "execution.checkpointing.dir": os.path.join(workdir, "checkpoints"),
        "state.backend.type": "rocksdb",
        "execution.checkpointing.incremental": "true",
        "state.backend.rocksdb.localdir": os.path.join(workdir, "rocksdb"),
        "restart-strategy.type": "none",
    }
    if restore_from is not None:
        config["execution.state-recovery.path"] = restore_from
    env = StreamExecutionEnvironment.get_execution_environment(Configuration(config))
    env.set_parallelism(2)
    source = DataGeneratorSource(lambda i: (i if i < keys else i % HOT_KEYS, 1), count=None)
    (
        env.from_source(source, WatermarkStrategy.no_watermarks(), "generator").uid("gen")
        .key_by(lambda t: t[0]).sum(1).uid("sum")
        .sink_to(DiscardingSink()).uid("discard")
    )  # fmt: skip
    submitted = time.perf_counter()
    client = env.execute_async(f"savepoint formats, {keys} keys")
    master: Any = client._master
    [keyed] = [v for v in master.job_graph.vertices if not v.is_source]
    return client, (master, keyed), submitted


def _records_in(handle: Any) -> int:
    master, keyed = handle
    views = [master.task_metrics.view(keyed.id, s) for s in range(keyed.parallelism)]
    return sum(v.records_in for v in views if v is not None)


def _wait(condition: Any, client: Any, what: str) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while not condition():
        if client.get_job_status().result().is_globally_terminal_state():
            raise RuntimeError(f"the job ended before {what}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"no {what} within {TIMEOUT_S} s")
        time.sleep(0.05)


def _size(directory: str) -> int:
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(directory) for f in fs)


def run(keys: int, rounds: int) -> list[dict[str, Any]]:
    workdir = tempfile.mkdtemp(prefix="undertow-savepoint-formats-")
    try:
        client, handle, _ = _job(workdir, keys, None)
        taken: dict[SavepointFormatType, list[tuple[float, str]]] = {}
        try:
            _wait(lambda: _records_in(handle) >= keys, client, "filled state")
            for _ in range(rounds):
                for fmt in (SavepointFormatType.CANONICAL, SavepointFormatType.NATIVE):
                    started = time.perf_counter()
                    target = os.path.join(workdir, "sp", fmt.name)
                    path = client.trigger_savepoint(target, fmt).result(timeout=TIMEOUT_S)
                    taken.setdefault(fmt, []).append((time.perf_counter() - started, path))
        finally:
            client.cancel()
        rows = []
        for fmt, results in taken.items():
            path = results[-1][1]
            stderr = _Tee()
            with contextlib.redirect_stderr(stderr):
                resumed, handle, submitted = _job(workdir, keys, path)
                try:
                    _wait(lambda: _records_in(handle) > 0, resumed, "first record")  # noqa: B023
                    first_record_s = time.perf_counter() - submitted
                finally:
                    resumed.cancel()
            line = RESTORED.search(stderr.getvalue())
            rows.append({
                "format": fmt.name, "keys": keys,
                "take_s": [t for t, _ in results], "size": _size(path),
                "restore_line_ms": int(line.group(1)) if line else None,
                "first_record_s": first_record_s,
            })  # fmt: skip
        return rows
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--keys", default="1000000,2000000")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    print(f"{'format':<10}{'keys':>12}{'take s (each)':>22}{'median':>8}{'size MiB':>10}"
          f"{'restore line ms':>17}{'first record s':>16}")  # fmt: skip
    for keys in (int(k) for k in args.keys.split(",")):
        for r in run(keys, args.rounds):
            each = ", ".join(f"{t:.2f}" for t in r["take_s"])
            median = statistics.median(r["take_s"])
            print(f"{r['format']:<10}{r['keys']:>12,}{each:>22}{median:>8.2f}"
                  f"{r['size'] / 2**20:>10.1f}{r['restore_line_ms']!s:>17}"
                  f"{r['first_record_s']:>16.2f}", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
