"""Batch streams under failures: a keyed columnar running sum survives a worker kill (restored
from a checkpoint) and a rescale 2 -> 3 (from a savepoint), with every key's sum carried on.

The job: record batches of the numbers ``0..N-1`` (paced) -> ``(k = i % KEYS, v = 1)`` ->
``key_by("k")`` -> ``sum("v")`` -> a sink that appends every output row to a file. The sink is
at-least-once (rows after the last checkpoint are written again), so the check is per key: the
running sums seen are exactly ``1..N/KEYS`` as a set and the largest is ``N/KEYS``. If the
columnar state were not restored, the restored job would resume the source but start each sum
again from zero, and no key would reach ``N/KEYS`` (that is the restore evidence).
"""

from __future__ import annotations

import json
import os
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from undertow.datastream.connectors.number_seq_batches import NumberSequenceBatchSource
from undertow.testing.oracle import oracle_seed
from undertow.testing.restore_control import evidence

from .conftest import EnvFactory
from .kills import RESTARTING, run_killing_a_worker_after_a_checkpoint
from .restore_evidence import restored_checkpoints

N, KEYS, ROWS = 8_000, 40, 100


def _build(env: Any, out: Path, pace_s: float) -> None:
    def keyed(batch: pa.RecordBatch) -> pa.RecordBatch:
        time.sleep(pace_s)
        value = batch.column("value")
        ones = pa.array([1] * batch.num_rows, type=pa.int64())
        return pa.record_batch({"k": pc.remainder(value, KEYS), "v": ones})

    def write(batch: pa.RecordBatch) -> None:
        line = json.dumps([batch.column("k").to_pylist(), batch.column("v").to_pylist()]) + "\n"
        fd = os.open(out, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)

    source = NumberSequenceBatchSource(0, N - 1, batch_rows=ROWS)
    stream = env.from_source(source, None, "numbers").as_batches().uid("numbers")
    ones = stream.map_batches(keyed).uid("keyed")
    ones.key_by("k").sum("v").uid("sum").add_sink(write)


def _sums(out: Path) -> dict[int, set[int]]:
    seen: dict[int, set[int]] = defaultdict(set)
    for line in out.read_text().splitlines():
        keys, sums = json.loads(line)
        for k, s in zip(keys, sums):
            seen[k].add(s)
    return seen


def _check(seen: dict[int, set[int]], seed: int) -> None:
    per_key = N // KEYS
    short = {k: max(s) for k, s in seen.items() if max(s) != per_key}
    evidence(
        not short and len(seen) == KEYS,
        f"seed {seed}: keys whose running sum did not reach {per_key} (their columnar state "
        f"did not come back): {dict(list(short.items())[:5])}",
    )
    wrong = {k: len(s) for k, s in seen.items() if s != set(range(1, per_key + 1))}
    assert not wrong, (seed, wrong)


@pytest.mark.restores(catches=["keyed-state"])
@pytest.mark.parametrize("target", ["local"])
def test_columnar_sum_survives_a_worker_kill(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seed = oracle_seed()
    env = make_env(parallelism=2, config={
        "execution.checkpointing.interval": "100 ms",
        "execution.checkpointing.dir": str(tmp_path / "checkpoints"),
        "restart-strategy.type": "fixed-delay",
        "restart-strategy.fixed-delay.attempts": "2",
        "restart-strategy.fixed-delay.delay": "0 ms",
    })  # fmt: skip
    out = tmp_path / "sums.jsonl"
    _build(env, out, pace_s=0.015)
    client = env.execute_async("columnar kill")
    _, console = run_killing_a_worker_after_a_checkpoint(
        client, capsys, seed, earliest_s=0.05, latest_s=0.4, timeout_s=90.0, checkpoints=2
    )
    assert RESTARTING.findall(console), (seed, console)
    _check(_sums(out), seed)


@pytest.mark.restores(catches=["keyed-state"])
@pytest.mark.parametrize("target", ["local-threads"])
def test_columnar_sum_rescales_from_two_to_three_subtasks(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = {"execution.checkpointing.interval": "100 ms",
              "execution.checkpointing.dir": str(tmp_path / "checkpoints")}  # fmt: skip
    out = tmp_path / "sums.jsonl"
    env = make_env(parallelism=2, config=config)
    _build(env, out, pace_s=0.01)
    client = env.execute_async("columnar p=2")
    while not out.exists() or len(out.read_text().splitlines()) < 20:
        time.sleep(0.02)
    savepoint = client.stop_with_savepoint(str(tmp_path / "sp")).result(timeout=60)
    first = _sums(out)
    assert first and max(max(s) for s in first.values()) < N // KEYS  # stopped midway

    env = make_env(parallelism=3, config={**config, "execution.state-recovery.path": savepoint})
    _build(env, out, pace_s=0.0)
    env.execute("columnar p=3")
    assert restored_checkpoints(capsys.readouterr().err), "the p=3 job did not restore"
    _check(_sums(out), 0)
