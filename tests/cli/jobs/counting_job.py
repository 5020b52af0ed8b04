"""A job for ``undertow run`` restore tests: counts per key, printing every 100th count.

``counting_job.py leave [--extra]``: run with the checkpointing that ``undertow run -D`` set
(interval, directory, RETAIN_ON_CANCELLATION), wait for a completed checkpoint, cancel, and
print ``RETAINED <checkpoint directory>``; past five sixths of its records the source slows to
a crawl, so a loaded machine cannot finish the job (and delete its checkpoints) before that.
The fast part (about 1.2 s) holds the checkpoints waited for: a checkpoint taken while the slow
records are read waits for their batches (it took 28 s with the crawl from half way).
``--extra`` adds a second, independent pipeline
(uids ``extra-gen``, ``extra-sum``) whose state a job without it does not claim.

``counting_job.py resume [CLAIMED_DIR]``: run to the end (the restore flags come from
``undertow run``); with ``CLAIMED_DIR``, print ``CLAIMED GONE WHILE RUNNING`` once that
directory disappeared while the job still ran.

Counts are printed as ``(key, count)`` when ``count`` is a multiple of 100; every key reaches
``RECORDS // KEYS``. A job resumed with its state prints only the counts after the checkpoint.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from undertow.common import WatermarkStrategy
from undertow.datastream import JobStatus, StreamExecutionEnvironment
from undertow.datastream.connectors import DataGeneratorSource, DiscardingSink
from undertow.storage import CheckpointStorage

RECORDS = 6000
KEYS = 6
TIMEOUT_S = 60.0


def _record(i: int) -> tuple[int, int]:
    return (i % KEYS, 1)


def _record_slow_at_the_end(i: int) -> tuple[int, int]:
    if i >= RECORDS * 5 // 6:
        time.sleep(0.05)
    return (i % KEYS, 1)


def _counts(env: Any, prefix: str, leave: bool) -> Any:
    generate = _record_slow_at_the_end if leave else _record
    source = DataGeneratorSource(generate, count=RECORDS, records_per_second=2000)
    return (
        env.from_source(source, WatermarkStrategy.no_watermarks(), f"{prefix}gen")
        .uid(f"{prefix}gen")
        .key_by(lambda t: t[0])
        .sum(1)
        .uid(f"{prefix}sum")
    )


def _wait_for(condition: Any, what: str) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.02)


def _completed(root: str, job_id: str) -> list[int]:
    return CheckpointStorage(root, job_id).completed_checkpoint_ids()


def main() -> None:
    mode, rest = sys.argv[1], sys.argv[2:]
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    leave = mode == "leave"
    _counts(env, "", leave).filter(lambda t: t[1] % 100 == 0).print()
    if "--extra" in rest:
        _counts(env, "extra-", leave).sink_to(DiscardingSink())
    client = env.execute_async(f"counting, {mode}")
    if leave:
        root = env.get_configuration().get_string("execution.checkpointing.dir", "")
        job = client.get_job_id()
        # a few checkpoints in: the counts went well past the first hundred of every key
        _wait_for(lambda: max(_completed(root, job), default=0) >= 8, "a checkpoint")
        client.cancel()
        _wait_for(
            lambda: client.get_job_status().result() is JobStatus.CANCELED, "the cancellation"
        )
        latest = max(_completed(root, job))
        print(f"RETAINED {CheckpointStorage(root, job).checkpoint_pointer(latest)}", flush=True)
        return
    claimed = Path(rest[0]) if rest else None
    if claimed is not None:
        _wait_for(
            lambda: client.get_job_status().result() is not JobStatus.INITIALIZING, "the start"
        )
        _wait_for(lambda: not claimed.exists()
                  or client.get_job_status().result() is not JobStatus.RUNNING,
                  "the claimed checkpoint's deletion")  # fmt: skip
        if client.get_job_status().result() is JobStatus.RUNNING:
            print("CLAIMED GONE WHILE RUNNING", flush=True)
    client.get_job_execution_result(timeout=TIMEOUT_S)


if __name__ == "__main__":
    main()
