"""The first checkpoint after a NO_CLAIM restore: duplicated (FLIP-193) vs re-uploaded, against
an ordinary incremental checkpoint (issue 29, part 2).

A first job (``benchmarks/state_scale.py``'s: generator -> key_by -> sum -> discard, parallelism
2, ``local`` target, RocksDB incremental, a checkpoint every 1 s) fills ``--keys`` keys, then
updates only 1,000 hot keys; the ``--samples`` checkpoints triggered after the fill are the
*ordinary incremental* baseline (duration trigger -> completion, bytes written: Flink's
checkpointed size). Its last checkpoint is retained and two more jobs restore it in
``NO_CLAIM``, one after another:

* ``duplicate``: as shipped, the restored SST files are hard-linked into the new job's
  ``shared/`` before it starts, so its first checkpoint uploads only what changed;
* ``re-upload``: the control, with the storage's duplicate capability switched off in this
  process (``CheckpointStorage.duplicate_method`` returns ``None``; the JobMaster runs here),
  so the first checkpoint is full, as before FLIP-193 and as in Flink without it.

For each: the first checkpoint's duration and bytes written, and ``to 1st chk``: submission to
that checkpoint's completion (the duplication happens in between, before the first attempt, so
its cost is in this figure, not in the checkpoint's duration). Prints the target line
``target duplicate_first_checkpoint: X(times) an incremental checkpoint (goal <= 2(times)):
met|missed`` (with the multiplication sign)
(X: the duplicate row's first-checkpoint duration over the baseline's p50).

Usage: ``python benchmarks/duplicate.py [--keys 8000000] [--samples 3]``
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from typing import Any

from state_scale import TIMEOUT_S, _env

from undertow.runtime.master.checkpoint_stats import CheckpointStatus
from undertow.storage import CheckpointStorage

BACKEND = "rocksdb-incremental"


def _completed(master: Any, after_ms: int = 0, above_id: int = -1) -> list[Any]:
    history = master.checkpoint_stats.snapshot().history
    return sorted((e for e in history if e.status is CheckpointStatus.COMPLETED
                   and not e.is_savepoint and e.trigger_timestamp > after_ms
                   and e.checkpoint_id > above_id), key=lambda e: e.checkpoint_id)  # fmt: skip


def _row(entry: Any) -> dict[str, float]:
    return {
        "ms": entry.completion_timestamp - entry.trigger_timestamp,
        "written": sum(a.checkpointed_size for a in entry.acks()),
        "size": sum(a.state_size for a in entry.acks()),
    }


def baseline(keys: int, samples: int, workdir: str) -> tuple[list[dict[str, float]], str]:
    """The first job: its incremental checkpoints after the fill, and its retained pointer."""
    retain = {"execution.checkpointing.externalized-checkpoint-retention":
              "RETAIN_ON_CANCELLATION"}  # fmt: skip
    env = _env(BACKEND, keys, workdir, **retain)
    submitted = time.perf_counter()
    client = env.execute_async(f"duplicate benchmark {keys} fill")
    master: Any = client._master
    [keyed] = [v for v in master.job_graph.vertices if not v.is_source]
    deadline = time.monotonic() + TIMEOUT_S
    filled_ms: int | None = None
    try:
        while True:
            time.sleep(0.25)
            if time.monotonic() > deadline:
                raise TimeoutError(f"{keys:,} keys: not measured within {TIMEOUT_S} s")
            if client.get_job_status().result().is_globally_terminal_state():
                raise RuntimeError(f"{keys:,} keys: the first job ended early")
            views = [master.task_metrics.view(keyed.id, s) for s in range(2)]
            if filled_ms is None:
                if sum(v.records_in for v in views if v is not None) >= keys:
                    filled_ms = int(time.time() * 1000)
                    print(f"  filled {keys:,} keys in {time.perf_counter() - submitted:.0f} s",
                          flush=True)  # fmt: skip
                continue
            measured = _completed(master, filled_ms)
            if len(measured) >= samples:
                break
    finally:
        client.cancel()
    while not client.get_job_status().result().is_globally_terminal_state():
        time.sleep(0.1)
    time.sleep(0.5)  # the JobMaster keeps the retained checkpoint as it shuts down
    storage = CheckpointStorage(os.path.join(workdir, "checkpoints"), client.get_job_id())
    pointer = storage.checkpoint_pointer(max(storage.completed_checkpoint_ids()))
    return [_row(e) for e in measured[:samples]], pointer


def restored_first(keys: int, workdir: str, pointer: str, duplicate: bool) -> dict[str, float]:
    """A job restored from ``pointer`` in NO_CLAIM: its first checkpoint (see the docstring)."""
    restored_id = int(pointer.rstrip("/").rsplit("-", 1)[1])
    original = CheckpointStorage.duplicate_method
    if not duplicate:  # the control: a storage that cannot duplicate
        CheckpointStorage.duplicate_method = lambda self, uri: None  # type: ignore[method-assign]
    try:
        env = _env(BACKEND, keys, workdir, **{
            "execution.state-recovery.path": pointer,
            "execution.state-recovery.claim-mode": "NO_CLAIM",
        })  # fmt: skip
        submitted = time.perf_counter()
        client = env.execute_async(f"duplicate benchmark {keys} restore")
        master: Any = client._master
        deadline = time.monotonic() + TIMEOUT_S
        try:
            while not (found := _completed(master, above_id=restored_id)):
                if client.get_job_status().result().is_globally_terminal_state():
                    raise RuntimeError(f"{keys:,} keys: the restored job ended")
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{keys:,} keys: no checkpoint within {TIMEOUT_S} s")
                time.sleep(0.05)
            to_first = time.perf_counter() - submitted
        finally:
            client.cancel()
        while not client.get_job_status().result().is_globally_terminal_state():
            time.sleep(0.1)
    finally:
        CheckpointStorage.duplicate_method = original  # type: ignore[method-assign]
    return {**_row(found[0]), "to_first_s": to_first}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--keys", type=int, default=8_000_000)
    parser.add_argument("--samples", type=int, default=3)
    args = parser.parse_args()
    workdir = tempfile.mkdtemp(prefix="undertow-duplicate-")
    try:
        incremental, pointer = baseline(args.keys, args.samples, workdir)
        dup = restored_first(args.keys, workdir, pointer, duplicate=True)
        full = restored_first(args.keys, workdir, pointer, duplicate=False)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    base_ms = statistics.median(r["ms"] for r in incremental)
    base_written = statistics.median(r["written"] for r in incremental)
    mib = 2**20
    print(f"\n{args.keys:,} keys, RocksDB incremental, parallelism 2, local target, "
          f"load average {os.getloadavg()[0]:.1f}")  # fmt: skip
    print("| checkpoint | duration | written | state | to 1st chk |")
    print("|---|---:|---:|---:|---:|")
    state = incremental[-1]["size"] / mib
    print(f"| ordinary incremental (p50 of {len(incremental)}) | {base_ms:,.0f} ms | "
          f"{base_written / mib:.2f} MiB | {state:.2f} MiB | |")  # fmt: skip
    for name, row in (("first after NO_CLAIM, duplicate", dup),
                      ("first after NO_CLAIM, re-upload", full)):  # fmt: skip
        print(f"| {name} | {row['ms']:,.0f} ms | {row['written'] / mib:.2f} MiB | "
              f"{row['size'] / mib:.2f} MiB | {row['to_first_s']:.1f} s |")  # fmt: skip
    ratio = dup["ms"] / max(base_ms, 1)
    print(f"re-upload / duplicate: {full['ms'] / max(dup['ms'], 1):.1f}x the time, "
          f"{full['written'] / max(dup['written'], 1):.1f}x the bytes")  # fmt: skip
    verdict = "met" if ratio <= 2 else "missed"
    times = "\u00d7"
    print(f"target duplicate_first_checkpoint: {ratio:.2f}{times} an incremental checkpoint "
          f"(goal \u2264 2{times}): {verdict}")  # fmt: skip


if __name__ == "__main__":
    main()
