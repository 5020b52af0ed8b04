"""References on the output side, through a job (issue 29, item 1b): a job restores an
unaligned checkpoint in place whose source's output buffers are restored into its
subpartitions and still wait there, and a checkpoint taken during that recovery refers to the
unsent rest in the restored checkpoint's file instead of writing it again.

The oracle source (records of 40-60 KB, many buffers each) -> key_by -> a spinning verifying
sink, p=2; every key goes to sink subtask 0. Both facts the test needs are made, not timed
(:class:`~undertow.testing.recovery_hold.RecoveryHold`): the sink subtask blocks while source
subtask 1 takes a barrier with a record for it queued (checkpoint K; the job fails once K
completed and restores it), and in the restored attempt it does not open until source subtask
1 took a barrier (its restored output still queued). Timing alone failed about half the runs:
the sink took the restored output before the first checkpoint's barrier, or K's output state
was too small to be in a file (below the 20 KiB inline threshold) or to outlast the window.
Incremental channel state is off, so every reference is to restored data. A daemon thread
reads each completed checkpoint's ``_metadata`` while the job runs (a finished job deletes its
checkpoints). Proven: a checkpoint after the restore has OUTPUT handles that refer to the
restored checkpoint's files, its REST statistics report referenced bytes
(``referenced_data``), and all six oracle counts are 0.
"""

from __future__ import annotations

import random
import threading
from pathlib import Path
from typing import Any

import pytest

from undertow.common import WatermarkStrategy
from undertow.datastream.connectors import DiscardingSink
from undertow.runtime.checkpoint.metadata import decode_metadata
from undertow.state.key_groups import assign_to_key_group, key_group_range_for_subtask
from undertow.storage import CheckpointStorage
from undertow.storage.keys import read_key
from undertow.testing.oracle import (
    OracleResult,
    OracleSource,
    SizeClass,
    VerifyingMap,
    oracle_key,
)
from undertow.testing.recovery_hold import RecoveryHold

from .conftest import EnvFactory
from .restore_evidence import RestWatcher, assert_restores, evidence

KEYS, RECORDS_PER_KEY = 4, 40
RATE = 100.0  # records per second per source reader
SINK_SPIN_S = 0.02
SIZES = (SizeClass(1.0, 40_000, 60_000),)
JOB_TIMEOUT_S = 120.0
MAX_PARALLELISM = 128  # pipeline.max-parallelism, the default
#: The sink subtask held: every key goes to it (asserted), and it runs on worker 0, so source
#: subtask 1 (worker 1) sends it data through TCP and marks the barriers that end the holds.
HELD = 0


class OutputReferences:
    """Polls the job's completed checkpoints every 20 ms (daemon thread) and keeps, per
    checkpoint, the bytes its OUTPUT handles write and refer to, and the files referred to."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.seen: dict[int, tuple[int, int, frozenset[str]]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="metadata-watcher", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            jobs = [d for d in self.root.iterdir() if d.is_dir() and any(d.glob("chk-*"))]
            key = read_key()
            if len(jobs) != 1 or key is None:
                continue
            storage = CheckpointStorage(str(self.root), jobs[0].name)
            try:
                ids = storage.completed_checkpoint_ids()
            except OSError:
                continue
            for cid in ids:
                if cid in self.seen:
                    continue
                try:
                    meta = decode_metadata(storage.read_metadata(cid), key, where=str(storage))
                except Exception:  # subsumed while we read it
                    continue
                outputs = [h.output for v in meta.vertices for h in v.channel_state.values()
                           if h.output is not None]  # fmt: skip
                self.seen[cid] = (
                    sum(h.range_length for h in outputs),
                    sum(h.referenced_bytes for h in outputs),
                    frozenset(r.file.path for h in outputs for r in h.references),
                )

    def stop(self) -> dict[int, tuple[int, int, frozenset[str]]]:
        self._stop.set()
        self._thread.join(5)
        return self.seen


def config(directory: Path, restarts: int) -> dict[str, Any]:
    return {
        "execution.checkpointing.interval": "100 ms",
        "execution.checkpointing.dir": str(directory),
        "execution.checkpointing.unaligned.enabled": "true",
        "execution.checkpointing.unaligned.incremental-channel-state.enabled": "false",
        # a checkpoint whose barrier passed the sources before the held sink blocked waits
        # for it: expire it, so that the next one ends the hold (RecoveryHold); not sooner:
        # the checkpoint that ends the hold must complete (under load 35-40 a 1 s time-out
        # expired it in 2 of 10 runs, and no failure came)
        "execution.checkpointing.timeout": "5 s",
        "execution.checkpointing.tolerable-failed-checkpoints": "100",
        "restart-strategy.type": "fixed-delay",
        "restart-strategy.fixed-delay.attempts": str(restarts),
        "restart-strategy.fixed-delay.delay": "0 ms",
        "rest.port": "0",
        "taskmanager.memory.segment-size": "4 kb",
        "taskmanager.network.memory.buffers-per-channel": "1",
        "taskmanager.network.memory.floating-buffers-per-gate": "0",
        "taskmanager.network.memory.max-buffers-per-channel": "1",
    }


@pytest.mark.restores(catches=["channel-state"])
@pytest.mark.parametrize("target", ["local-threads"])
def test_a_checkpoint_during_recovery_refers_to_restored_output_still_queued(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    held_groups = key_group_range_for_subtask(MAX_PARALLELISM, 2, HELD)
    assert all(assign_to_key_group(k, MAX_PARALLELISM) in held_groups for k in range(KEYS))
    # the sink blocks on a record of source subtask 1, on worker 1
    hold = RecoveryHold(tmp_path / "hold", subtasks=[HELD], producers=[1])
    env = make_env(parallelism=2, config=config(tmp_path, restarts=1))
    where = str(tmp_path / "evidence")
    source = OracleSource(KEYS, RECORDS_PER_KEY, SIZES, records_per_second=RATE)
    stream = env.from_source(source, WatermarkStrategy.no_watermarks(), "oracle").uid(
        "oracle-source"
    )
    # tags each record with its epoch: one reaching the sink in a later attempt was replayed
    tag = random.SystemRandom().randrange(1, 2**40)
    stream = stream.map(VerifyingMap("at source", tag, where)).name("verify").uid("verify")
    stream = stream.map(hold.marker()).name("barrier marker").uid("marker")
    sink = hold.sink(RECORDS_PER_KEY, seq_order_kept=True, spin_s=SINK_SPIN_S, job_tag=tag,
                     evidence_dir=where)  # fmt: skip
    verified = stream.key_by(oracle_key).process(sink).name("verifying sink").uid("sink")
    verified.sink_to(DiscardingSink()).name("discard").uid("discard")
    client = env.execute_async("restored output, referred to")
    watcher, outputs = RestWatcher(client), OutputReferences(tmp_path)
    result = client.get_job_execution_result(timeout=JOB_TIMEOUT_S)
    console = capsys.readouterr().err
    seen = outputs.stop()
    held, marked, first = hold.held(), hold.barrier(0), hold.barrier(1)
    assert marked is not None and held.get((0, HELD)) == f"barrier {marked}", (
        f"the sink's hold in attempt 0 did not end at a marked barrier: {held}, the sink "
        f"published {hold.blocked(0)}"
    )
    [restored] = assert_restores(console, watcher.stop(), restores=1)
    assert held == {(0, HELD): f"barrier {restored}", (1, HELD): f"barrier {first}"}, (
        f"the holds did not end as planned (restored {restored}): {held}"
    )
    oracle = OracleResult.from_job_result(result, KEYS, RECORDS_PER_KEY, where)
    oracle.assert_restored(replayed=True)
    evidence(seen.get(restored, (0, 0, frozenset()))[0] > 0,
             f"the restored checkpoint {restored} has no output state: {seen}")  # fmt: skip
    oracle.assert_exactly_once()
    referring = [
        cid for cid, (_, referenced, files) in sorted(seen.items())
        if cid > restored and referenced > 0
        and any(f.startswith(f"chk-{restored}/") for f in files)
    ]  # fmt: skip
    assert referring, f"no checkpoint after {restored} refers to its output state: {seen}"
    rest = watcher.completed
    assert any(rest.get(cid, {}).get("referenced_data", 0) > 0 for cid in referring), {
        cid: rest.get(cid, {}).get("referenced_data") for cid in referring
    }
