"""Batch streams under failures: a keyed columnar running sum survives a worker kill (restored
from a checkpoint) and a rescale 2 -> 3 (from a savepoint), with every key's sum carried on;
the rescale also with the sum as a ``reduce_batches`` of an addition.

The job: record batches of the numbers ``0..N-1`` (paced) -> ``(k = i % KEYS, v = 1)`` ->
``key_by("k")`` -> ``sum("v")`` -> a sink that appends every output row to a file. The sink is
at-least-once (rows after the last checkpoint are written again), so the check is per key: the
running sums seen are exactly ``1..N/KEYS`` as a set and the largest is ``N/KEYS``. If the
columnar state were not restored, the restored job would resume the source but start each sum
again from zero, and no key would reach ``N/KEYS``; if the source's position were not restored
either, the restored job would map all ``N`` rows again (the map records the rows each attempt
mapped). Both are the restore evidence.
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


def _append(path: Path, line: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def _add(earlier: pa.RecordBatch, later: pa.RecordBatch) -> pa.RecordBatch:
    return pa.record_batch({"v": pc.add(earlier.column("v"), later.column("v"))})


def _build(env: Any, out: Path, pace_s: float, mapped: Path, how: str = "sum") -> None:
    """The job (the running sum by ``sum`` or by ``reduce_batches``); ``mapped`` gets a line
    ``attempt rows`` per batch the map saw."""

    class Keyed:
        def open(self, runtime_context: Any) -> None:
            self.attempt = runtime_context.get_attempt_number()

        def map_batches(self, batch: pa.RecordBatch) -> pa.RecordBatch:
            time.sleep(pace_s)
            _append(mapped, f"{self.attempt} {batch.num_rows}\n")
            value = batch.column("value")
            ones = pa.array([1] * batch.num_rows, type=pa.int64())
            return pa.record_batch({"k": pc.remainder(value, KEYS), "v": ones})

    def write(batch: pa.RecordBatch) -> None:
        line = json.dumps([batch.column("k").to_pylist(), batch.column("v").to_pylist()])
        _append(out, line + "\n")

    source = NumberSequenceBatchSource(0, N - 1, batch_rows=ROWS)
    stream = env.from_source(source, None, "numbers").as_batches().uid("numbers")
    ones = stream.map_batches(Keyed()).uid("keyed")
    keyed = ones.key_by("k")
    sums = keyed.sum("v") if how == "sum" else keyed.reduce_batches(_add)
    sums.uid("sum").add_sink(write)


def _sums(out: Path) -> dict[int, set[int]]:
    seen: dict[int, set[int]] = defaultdict(set)
    for line in out.read_text().splitlines():
        keys, sums = json.loads(line)
        for k, s in zip(keys, sums):
            seen[k].add(s)
    return seen


def _resumed(mapped: Path, seed: int) -> None:
    """Restore evidence: the last attempt in ``mapped`` mapped fewer than all ``N`` rows."""
    rows: dict[int, int] = defaultdict(int)
    for line in mapped.read_text().splitlines():
        attempt, count = line.split()
        rows[int(attempt)] += int(count)
    last = max(rows)
    evidence(rows[last] < N, f"seed {seed}: attempt {last} mapped {rows[last]} of {N} rows: the "
             "source began again (its position was not restored)")  # fmt: skip


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


@pytest.mark.restores(catches=["keyed-state", "source-positions"])
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
    out, mapped = tmp_path / "sums.jsonl", tmp_path / "mapped"
    _build(env, out, pace_s=0.015, mapped=mapped)
    client = env.execute_async("columnar kill")
    # the checkpoints the kill waits for come after rows went through (so the source's
    # restored position is past 0: the evidence of _resumed)
    while not mapped.exists() or len(mapped.read_text().splitlines()) < 10:
        time.sleep(0.01)
    capsys.readouterr()
    _, console = run_killing_a_worker_after_a_checkpoint(
        client, capsys, seed, earliest_s=0.05, latest_s=0.4, timeout_s=90.0, checkpoints=2
    )
    assert RESTARTING.findall(console), (seed, console)
    _resumed(mapped, seed)
    _check(_sums(out), seed)


@pytest.mark.restores(catches=["keyed-state", "source-positions"])
@pytest.mark.parametrize("target", ["local-threads"])
@pytest.mark.parametrize("how", ["sum", "reduce_batches"])
def test_columnar_sum_rescales_from_two_to_three_subtasks(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str], how: str
) -> None:
    config = {"execution.checkpointing.interval": "100 ms",
              "execution.checkpointing.dir": str(tmp_path / "checkpoints")}  # fmt: skip
    out = tmp_path / "sums.jsonl"
    env = make_env(parallelism=2, config=config)
    _build(env, out, pace_s=0.01, mapped=tmp_path / "mapped-p2", how=how)
    client = env.execute_async("columnar p=2")
    while not out.exists() or len(out.read_text().splitlines()) < 20:
        time.sleep(0.02)
    savepoint = client.stop_with_savepoint(str(tmp_path / "sp")).result(timeout=60)
    first = _sums(out)
    assert first and max(max(s) for s in first.values()) < N // KEYS  # stopped midway

    env = make_env(parallelism=3, config={**config, "execution.state-recovery.path": savepoint})
    _build(env, out, pace_s=0.0, mapped=tmp_path / "mapped-p3", how=how)
    env.execute("columnar p=3")
    assert restored_checkpoints(capsys.readouterr().err), "the p=3 job did not restore"
    _resumed(tmp_path / "mapped-p3", 0)
    _check(_sums(out), 0)
